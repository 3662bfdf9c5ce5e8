"""A LocalStack Lambda runtime executor that needs no Docker: functions run as host processes.

LocalStack creates a function's execution environment through a runtime executor chosen by
``LAMBDA_RUNTIME_EXECUTOR`` from the plugin namespace ``localstack.lambda.runtime_executor``; its only
executor, ``docker``, pulls a runtime image and fails on a machine without Docker, so CloudFormation cannot
create an ``AWS::Lambda::Function`` there. This one (``LAMBDA_RUNTIME_EXECUTOR=seglog``) prepares nothing but
the unpacked code, so functions reach ``Active`` and stacks deploy, update and delete.

Invoking is supported the cheap way: each invocation runs the handler in a fresh host Python (the one
LocalStack runs on, started with ``-I -S`` so only the standard library and the unpacked code are on its
path, as on Lambda) with the function's environment, the event on stdin and the answer in a file. There is
no warm reuse, no memory limit and no Init Duration; the host's architecture must match the binaries in the
artifact (an arm64 artifact with native wheels fails to import on an x86_64 host, with ImportModuleError).

This module runs inside LocalStack's virtualenv (seglog_stack.installer installs it there); it is not part of
the project's packages and is type-checked by no one but LocalStack's own interfaces.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from localstack import config
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin
from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException, RuntimeExecutor

LOG = logging.getLogger(__name__)

HOST = "127.0.0.1"

# Runs in the function's process: import the handler from the unpacked code the way Lambda's Python runtime
# does (module path, then attribute: AWS Lambda Developer Guide, "Define Lambda function handler in Python"),
# call it with the event and a minimal context, write the answer or the error document Lambda returns
# ("Lambda function errors in Python": errorMessage, errorType, stackTrace; an import failure is
# Runtime.ImportModuleError "Unable to import module ...", a missing function Runtime.HandlerNotFound).
_BOOTSTRAP = textwrap.dedent(
    """
    import importlib, json, os, sys, time, traceback
    code_dir, handler_name, answer_path, request_id = sys.argv[1:5]
    sys.path.insert(0, code_dir)

    class Context:
        function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        invoked_function_arn = os.environ.get("SEGLOG_INVOKED_ARN", "")
        aws_request_id = request_id
        log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        _deadline = time.monotonic() + float(os.environ.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "3"))

        def get_remaining_time_in_millis(self):
            return max(0, int((self._deadline - time.monotonic()) * 1000))

    def fail(kind, exc, message=None):
        answer = {"errorMessage": message or str(exc), "errorType": kind,
                  "stackTrace": traceback.format_exception(exc) if exc else []}
        with open(answer_path + ".error", "w") as out:
            json.dump(answer, out)
        sys.exit(0)

    module_name, _, attribute = handler_name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        fail("Runtime.ImportModuleError", exc, f"Unable to import module '{module_name}': {exc}")
    handler = getattr(module, attribute, None)
    if handler is None:
        fail("Runtime.HandlerNotFound", None, f"Handler '{attribute}' missing on module '{module_name}'")
    try:
        result = handler(json.load(sys.stdin), Context())
    except Exception as exc:
        fail(type(exc).__name__, exc)
    with open(answer_path, "w") as out:
        json.dump(result, out)
    """
)


class HostRuntimeExecutor(RuntimeExecutor):
    """One execution environment of a function, as a host process per invocation."""

    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id=id, function_version=function_version)
        self.env_vars: dict[str, str] = {}
        self.logs = ""

    def start(self, env_vars: dict[str, str]) -> None:
        self.env_vars = {key: str(value) for key, value in env_vars.items()}

    def stop(self) -> None:
        """Nothing runs between invocations."""

    def get_address(self) -> str:
        return HOST

    def get_endpoint_from_executor(self) -> str:
        return HOST

    def get_runtime_endpoint(self) -> str:
        return f"http://{HOST}:{config.GATEWAY_LISTEN[0].port}/_localstack_lambda/{self.id}"

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        request_id = payload["invoke-id"]
        code = self.function_version.config.code
        handler = self.function_version.config.handler
        if code is None or not handler:
            raise LambdaRuntimeException("the seglog executor runs zip functions only (no image, no handler)")
        timeout = float(self.function_version.config.timeout)
        env = {**self.env_vars, "SEGLOG_INVOKED_ARN": payload.get("invoked-function-arn", "")}
        with tempfile.TemporaryDirectory(prefix="seglog-invoke-") as tmp:
            answer = Path(tmp) / "answer.json"
            argv = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(code.get_unzipped_code_location()),
                    handler, str(answer), request_id]
            try:
                done = subprocess.run(argv, input=payload["payload"].encode(), env=env, cwd=tmp,
                                      capture_output=True, timeout=timeout)
                self.logs = (done.stdout + done.stderr).decode(errors="replace")
            except subprocess.TimeoutExpired as exc:
                self.logs = ((exc.stdout or b"") + (exc.stderr or b"")).decode(errors="replace")
                error = {"errorMessage": f"Task timed out after {timeout:.2f} seconds", "errorType": "Sandbox.Timedout"}
                return self._result(request_id, json.dumps(error).encode(), is_error=True)
            if answer.exists():
                return self._result(request_id, answer.read_bytes(), is_error=False)
            failed = answer.with_name(answer.name + ".error")
            if failed.exists():
                return self._result(request_id, failed.read_bytes(), is_error=True)
            error = {"errorMessage": f"the function's process exited with code {done.returncode}",
                     "errorType": "Runtime.ExitError"}
            return self._result(request_id, json.dumps(error).encode(), is_error=True)

    def _result(self, request_id: str, body: bytes, *, is_error: bool) -> InvocationResult:
        return InvocationResult(request_id=request_id, payload=body, is_error=is_error, logs=self.logs)

    def get_logs(self) -> str:
        return self.logs

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        """Unpack the code where invocations find it; no runtime image, no download."""
        if function_version.config.code:
            function_version.config.code.prepare_for_execution()

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        """The unpacked code stays with LocalStack's other files (its tmp dir, emptied at start and stop)."""

    @classmethod
    def validate_environment(cls) -> bool:
        LOG.info("seglog runtime executor: functions run as host processes (%s)", os.uname().machine)
        return True


class HostRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = "seglog"

    def load(self, *args: object, **kwargs: object) -> type[RuntimeExecutor]:
        return HostRuntimeExecutor
