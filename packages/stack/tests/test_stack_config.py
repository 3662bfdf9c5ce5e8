"""Fast checks of the local stack's settings, environment, pinned requirements and agent jar (no servers)."""

from __future__ import annotations

import ast
import io
import json
import re
import shutil
import socket
import subprocess
import tomllib
import zipfile
from importlib import resources
from pathlib import Path

import pytest
import yaml

from seglog_stack import (
    ProcessInfo,
    Profile,
    StackConfig,
    StackManager,
    StackState,
    StackStatus,
    docker_available,
    seglog_home,
)
from seglog_stack.agent_jar import MANIFEST, agent_jar_bytes, write_agent_jar
from seglog_stack.config import LAMBDA_RUNTIME_EXECUTOR, SERVICES
from seglog_stack.health import port_is_free
from seglog_stack.installer import EXECUTOR_PLUGIN_DIR, executor_plugin_digest, requirements_text
from seglog_stack.manager import localstack_process_env
from seglog_stack.tools import find_java_home


@pytest.mark.parametrize("text", ["dynamodb-local", "DynamoDB_Local", " dynamodb-local "])
def test_profile_parse_accepts_spelling_variants(text: str) -> None:
    assert Profile.DYNAMODB_LOCAL is Profile.parse(text)


def test_profile_parse_rejects_unknown_names_listing_the_choices() -> None:
    with pytest.raises(ValueError, match="dynamodb-local, localstack"):
        Profile.parse("docker")


def test_default_profile_is_dynamodb_local_with_default_ports(tmp_path: Path) -> None:
    config = StackConfig.resolve(env={}, run_dir=tmp_path)
    assert (Profile.DYNAMODB_LOCAL, 4566, 8000) == (
        config.profile,
        config.localstack_port,
        config.dynamodb_port,
    )


def test_ports_come_from_arguments_then_environment(tmp_path: Path) -> None:
    env = {"SEGLOG_LOCALSTACK_PORT": "4700", "SEGLOG_DYNAMODB_PORT": "8100"}
    from_env = StackConfig.resolve(env=env)
    assert (4700, 8100) == (from_env.localstack_port, from_env.dynamodb_port)
    config = StackConfig.resolve(env=env, localstack_port=4800)
    assert (4800, 8100) == (config.localstack_port, config.dynamodb_port)


def test_a_bad_port_variable_says_what_to_set() -> None:
    with pytest.raises(ValueError, match="SEGLOG_DYNAMODB_PORT"):
        StackConfig.resolve(env={"SEGLOG_DYNAMODB_PORT": "eight"})


def test_run_dir_defaults_to_the_profile_under_dot_seglog() -> None:
    config = StackConfig(profile=Profile.LOCALSTACK)
    assert Path.cwd() / ".seglog" / "localstack" == config.run_dir


def test_seglog_home_is_the_variable_or_the_user_cache(tmp_path: Path) -> None:
    assert tmp_path == seglog_home({"SEGLOG_HOME": str(tmp_path)})
    assert Path("/c/seglog") == seglog_home({"XDG_CACHE_HOME": "/c"})


def test_env_exports_point_dynamodb_at_dynamodb_local_and_the_rest_at_localstack(tmp_path: Path) -> None:
    config = StackConfig.resolve(
        Profile.DYNAMODB_LOCAL, localstack_port=4610, dynamodb_port=8010, env={}, run_dir=tmp_path
    )
    assert [
        "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8010",
        "export AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:8010",
        "export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4610",
        "export AWS_ENDPOINT_URL_S3=http://127.0.0.1:4610",
        "export AWS_ENDPOINT_URL_SNS=http://127.0.0.1:4610",
        "export AWS_ENDPOINT_URL_EVENTBRIDGE=http://127.0.0.1:4610",
        "export AWS_DEFAULT_REGION=us-east-1",
        "export AWS_REGION=us-east-1",
        "export AWS_ACCESS_KEY_ID=test",
        "export AWS_SECRET_ACCESS_KEY=test",
    ] == StackManager(config).env_exports()


def test_localstack_profile_serves_every_service_from_the_gateway(tmp_path: Path) -> None:
    config = StackConfig.resolve(Profile.LOCALSTACK, localstack_port=4611, env={}, run_dir=tmp_path)
    env = StackManager(config).env()
    assert {"http://127.0.0.1:4611"} == {v for k, v in env.items() if k.startswith("AWS_ENDPOINT_URL_")}
    assert ("dynamodb", "dynamodbstreams", "sqs", "s3", "sns", "events") == Profile.LOCALSTACK.localstack_services
    assert ("sqs", "s3", "sns", "events") == Profile.DYNAMODB_LOCAL.localstack_services


def test_deploy_profile_adds_cloudformation_and_lambda_with_our_executor_and_leaves_test_profiles_lean(
    tmp_path: Path,
) -> None:
    """The deploy target serves what CloudFormation needs to deploy template.yaml, and selects our Lambda runtime
    executor (functions without Docker); the two test profiles load none of that (no slower start for them)."""
    deploy = StackConfig.resolve(Profile.DEPLOY, localstack_port=4612, env={}, run_dir=tmp_path)
    env = localstack_process_env(deploy, tmp_path / "fs", 4612)
    assert {"cloudformation", "iam", "sts", "lambda", "events", "logs", "dynamodb", "dynamodbstreams", "sqs",
            "s3"} <= set(env["SERVICES"].split(","))
    assert LAMBDA_RUNTIME_EXECUTOR == env["LAMBDA_RUNTIME_EXECUTOR"]
    assert {"http://127.0.0.1:4612"} == set(deploy.endpoints.values())
    assert not Profile.DEPLOY.runs_dynamodb_local
    for profile in (Profile.DYNAMODB_LOCAL, Profile.LOCALSTACK):
        lean = localstack_process_env(StackConfig.resolve(profile, env={}, run_dir=tmp_path), tmp_path, 4612)
        assert "LAMBDA_RUNTIME_EXECUTOR" not in lean
        assert set(lean["SERVICES"].split(",")) <= set(SERVICES)


def test_the_executor_plugin_registers_in_localstacks_namespace_under_the_name_the_stack_selects() -> None:
    """LocalStack looks the executor up by LAMBDA_RUNTIME_EXECUTOR in the entry-point group
    localstack.lambda.runtime_executor; an unknown name silently falls back to Docker, so the name must match."""
    plugin = Path(str(resources.files("seglog_stack").joinpath(EXECUTOR_PLUGIN_DIR)))
    project = tomllib.loads((plugin / "pyproject.toml").read_text())
    entry_points = project["project"]["entry-points"]["localstack.lambda.runtime_executor"]
    assert [LAMBDA_RUNTIME_EXECUTOR] == list(entry_points)
    module, _, attribute = entry_points[LAMBDA_RUNTIME_EXECUTOR].partition(":")
    source = ast.parse((plugin / "src" / module / "__init__.py").read_text())
    classes = {node.name: node for node in source.body if isinstance(node, ast.ClassDef)}
    named = [stmt for stmt in classes[attribute].body if isinstance(stmt, ast.Assign)
             and [t.id for t in stmt.targets if isinstance(t, ast.Name)] == ["name"]]
    assert LAMBDA_RUNTIME_EXECUTOR == ast.literal_eval(named[0].value)


def test_an_edit_to_the_executor_plugin_changes_its_digest_so_the_installer_reinstalls_it(tmp_path: Path) -> None:
    plugin = Path(str(resources.files("seglog_stack").joinpath(EXECUTOR_PLUGIN_DIR)))
    copy = tmp_path / "plugin"
    shutil.copytree(plugin, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = executor_plugin_digest(copy)
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert before == executor_plugin_digest(copy)  # caches are not the plugin
    module = next(copy.rglob("__init__.py"))
    module.write_text(module.read_text() + "\n# edited\n")
    assert before != executor_plugin_digest(copy)


def test_one_port_cannot_serve_both_processes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot share port 4600"):
        StackConfig.resolve(localstack_port=4600, dynamodb_port=4600, env={}, run_dir=tmp_path)


def test_status_to_json_carries_state_profile_and_processes(tmp_path: Path) -> None:
    status = StackStatus(
        profile=Profile.LOCALSTACK,
        region="us-east-1",
        endpoints={"sqs": "http://127.0.0.1:4566"},
        processes=(
            ProcessInfo(name="localstack", pid=None, port=4566, log_path="x.log", running=False, healthy=False),
        ),
        run_dir=str(tmp_path),
        state=StackState.STOPPED,
    )
    data = json.loads(status.to_json())
    assert ("stopped", "localstack", 4566) == (data["state"], data["profile"], data["processes"][0]["port"])
    assert ("test", "test") == (data["access_key_id"], data["secret_access_key"])


def test_agent_jar_is_a_zip_whose_manifest_names_the_premain_class() -> None:
    with zipfile.ZipFile(io.BytesIO(agent_jar_bytes())) as jar:
        assert "META-INF/MANIFEST.MF" == jar.namelist()[0]
        assert MANIFEST == jar.read("META-INF/MANIFEST.MF").decode()
        assert "Premain-Class: NoopAgent" in MANIFEST
        klass = jar.read("NoopAgent.class")
    assert b"\xca\xfe\xba\xbe" == klass[:4]
    assert 52 == int.from_bytes(klass[6:8], "big")  # Java 8 class file, loadable by any JVM >= 8


def test_the_jvm_accepts_the_agent_jar(tmp_path: Path) -> None:
    java_home = find_java_home()
    assert java_home is not None, "Java >= 17 is needed by the local stack: install openjdk-17-jre-headless"
    jar = tmp_path / "agent.jar"
    write_agent_jar(jar)
    done = subprocess.run(
        [str(java_home / "bin" / "java"), f"-javaagent:{jar}", "-version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == done.returncode, done.stderr


def test_localstack_requirements_are_exact_pins_without_urls() -> None:
    lines = [line.strip() for line in requirements_text().splitlines()]
    requirements = [line for line in lines if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[a-z,]+\])?==[A-Za-z0-9.+]+", r) for r in requirements), requirements
    assert not any("://" in line for line in lines)
    for pin in (
        "localstack-core[runtime]==2026.3.0",
        "boto3==1.42.72",
        "cbor2==5.6.5",
        "pyopenssl==25.1.0",
        "cryptography==45.0.7",
    ):
        assert pin in requirements
    names = [r.split("==")[0].split("[")[0].lower() for r in requirements]
    assert sorted(set(names)) == sorted(names)


def test_a_port_bound_by_a_plain_socket_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        assert not port_is_free("127.0.0.1", port)
    assert port_is_free("127.0.0.1", port)


def test_docker_available_answers_a_bool() -> None:
    assert isinstance(docker_available(timeout=2.0), bool)


def test_docker_compose_runs_the_same_services_per_profile_as_host_mode() -> None:
    """docker-compose.yml (for machines with a Docker daemon) matches the host-mode profiles."""
    compose = yaml.safe_load((Path(__file__).parents[3] / "docker-compose.yml").read_text())
    services = compose["services"]
    by_profile: dict[str, dict[str, str]] = {}
    for service in services.values():
        for profile in service["profiles"]:
            if "localstack/localstack" in service["image"]:
                by_profile[profile] = service["environment"]
    for profile in Profile:
        assert ",".join(profile.localstack_services) == by_profile[profile.value]["SERVICES"]
    assert "v2" == by_profile["localstack"]["PROVIDER_OVERRIDE_DYNAMODBSTREAMS"]
    assert ["127.0.0.1:${SEGLOG_DYNAMODB_PORT:-8000}:8000"] == services["dynamodb-local"]["ports"]
    assert ["dynamodb-local"] == services["dynamodb-local"]["profiles"]
