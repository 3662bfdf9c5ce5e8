"""Start, inspect and stop the local stack: LocalStack (and DynamoDB Local) as plain host processes.

    seglog up      StackManager(config).up()      installs on first use, starts, waits until healthy
    seglog status  StackManager(config).status()  pid alive + health probe per process
    seglog down    StackManager(config).down()    SIGTERM, wait, SIGKILL; removes the pid files

State lives in the run dir (default ``<cwd>/.seglog/<profile>``): ``<name>.pid`` and ``<name>.log`` per
process, and LocalStack's FILESYSTEM_ROOT ``localstack-fs/`` whose var_libs is a link to the shared one in
the seglog home. Each stack gets its own root because LocalStack empties its tmp dir (which holds its
state) at start and stop: a shared root would let a test stack wipe a developer's.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

from seglog_stack import health, processes
from seglog_stack.config import (
    DYNAMODB_PORT_ENV,
    LAMBDA_RUNTIME_EXECUTOR,
    LOCALSTACK_PORT_ENV,
    Profile,
    StackConfig,
)
from seglog_stack.errors import PortInUseError, StackConflictError, StackStartError
from seglog_stack.info import ProcessInfo, StackInfo, StackState, StackStatus, export_lines, stack_env
from seglog_stack.installer import Installation, StackInstaller, clean_python_env, localstack_env
from seglog_stack.processes import PidRecord

log = structlog.get_logger("seglog.stack")

LOCALSTACK = "localstack"
DYNAMODB_LOCAL = "dynamodb-local"
STOP_TIMEOUT = 20.0
# How long a live process may fail its probe before `up` gives up on it and starts it anew.
REUSE_GRACE = 5.0


def localstack_process_env(config: StackConfig, filesystem_root: Path, port: int) -> dict[str, str]:
    """LocalStack's configuration for ``config``'s profile on ``port`` (its environment variables)."""
    profile = config.profile
    env = {
        **localstack_env(filesystem_root),
        # LocalStack's default gateway server (twisted) listens on all interfaces whatever host is given
        # here (GATEWAY_SERVER=hypercorn, if set in the environment, honours it); DynamoDB Local has no
        # host option either. Clients use 127.0.0.1.
        "GATEWAY_LISTEN": f"{config.host}:{port}",
        # URLs LocalStack hands out (SQS queue URLs) point back at this gateway, by path.
        "LOCALSTACK_HOST": f"{config.host}:{port}",
        "SQS_ENDPOINT_STRATEGY": "path",
        "SERVICES": ",".join(profile.localstack_services),
        "DYNAMODB_IN_MEMORY": "1",
        # No DNS server on port 53 (two stacks would fight over it), no certificate download,
        # no analytics.
        "DNS_ADDRESS": "0",
        "SKIP_SSL_CERT_DOWNLOAD": "1",
        "DISABLE_EVENTS": "1",
    }
    if profile in (Profile.LOCALSTACK, Profile.DEPLOY):
        env["PROVIDER_OVERRIDE_DYNAMODBSTREAMS"] = "v2"
    if profile is Profile.DEPLOY:
        # Functions are created (and invoked) by our executor, installed in LocalStack's venv by the
        # installer: LocalStack's own would pull a Docker image.
        env["LAMBDA_RUNTIME_EXECUTOR"] = LAMBDA_RUNTIME_EXECUTOR
    return env


class StackManager:
    """One local stack, as described by a :class:`StackConfig` (profile, ports, run dir, seglog home)."""

    def __init__(self, config: StackConfig | None = None, *, installer: StackInstaller | None = None) -> None:
        self.config = config if config is not None else StackConfig.resolve()
        self.installer = installer if installer is not None else StackInstaller(self.config.home)

    # -- public API -----------------------------------------------------------------------------------------

    def install(self) -> Installation:
        """Install (or check) the programs in the seglog home; ``up`` does this itself."""
        return self.installer.install()

    def up(self) -> StackInfo:
        """Start the stack, or reuse it if this run dir's stack is already running and healthy.

        Raises:
            PortInUseError: a port is held by something else.
            StackConflictError: this run dir's stack runs with another profile or other ports.
            StackStartError: a process exited or did not become healthy within ``startup_timeout``.
            InstallError, JavaNotFoundError: the first-use install failed.
        """
        started = time.monotonic()
        with self._run_dir_lock():
            wanted = self._wanted_ports()
            records = self._live_records()
            self._check_conflicts(records, wanted)
            to_start = [name for name in wanted if not self._reusable(records.get(name))]
            for name in to_start:
                if name in records:
                    log.warning("stack.process.unhealthy_restart", process=name, pid=records[name].pid)
                    processes.stop(records.pop(name), timeout=STOP_TIMEOUT)
                    self._pid_path(name).unlink(missing_ok=True)
            if to_start:
                self._start(to_start, records)
            else:
                log.info(
                    "stack.up.reused",
                    profile=self.config.profile.value,
                    pids={name: r.pid for name, r in records.items()},
                )
        info = self._info(records, healthy={name: True for name in wanted})
        log.info(
            "stack.up.ready",
            profile=self.config.profile.value,
            seconds=round(time.monotonic() - started, 1),
            endpoints=info.endpoints,
        )
        return info

    def down(self) -> None:
        """Stop every process recorded in the run dir (whatever its profile) and remove the pid files."""
        if not self.config.run_dir.is_dir():
            return
        with self._run_dir_lock():
            for path in sorted(self.config.run_dir.glob("*.pid")):
                record = PidRecord.load(path)
                if record is not None:
                    processes.stop(record, timeout=STOP_TIMEOUT)
                path.unlink(missing_ok=True)
        log.info("stack.down", run_dir=str(self.config.run_dir))

    def status(self) -> StackStatus:
        """The state of this run dir's stack: each process alive and answering its health probe?"""
        wanted = self._wanted_ports()
        records = self._live_records()
        healthy = {name: self._probe(name, record.port) for name, record in records.items()}
        if records and all(healthy.get(name) for name in wanted):
            state = StackState.RUNNING
        elif not records:
            state = StackState.STOPPED
        else:
            state = StackState.DEGRADED
        info = self._info(records, healthy=healthy)
        return StackStatus(**{f.name: getattr(info, f.name) for f in dataclasses.fields(info)}, state=state)

    def env(self) -> dict[str, str]:
        """The AWS SDK environment for this stack's configured ports (for ``os.environ.update``)."""
        return stack_env(self.config.endpoints, self.config.region)

    def env_exports(self) -> list[str]:
        """``export AWS_ENDPOINT_URL_DYNAMODB=...`` lines, for ``eval "$(seglog env)"``."""
        return export_lines(self.env())

    # -- state --------------------------------------------------------------------------------------------

    @contextmanager
    def _run_dir_lock(self) -> Iterator[None]:
        """Serialise up/down on one run dir (two terminals, or a test and a developer)."""
        self.config.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.config.run_dir / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _pid_path(self, name: str) -> Path:
        return self.config.run_dir / f"{name}.pid"

    def _log_path(self, name: str) -> Path:
        return self.config.run_dir / f"{name}.log"

    def _wanted_ports(self) -> dict[str, int]:
        """Process name -> port, for the processes this profile runs."""
        wanted = {LOCALSTACK: self.config.localstack_port}
        if self.config.profile.runs_dynamodb_local:
            wanted[DYNAMODB_LOCAL] = self.config.dynamodb_port
        return wanted

    def _live_records(self) -> dict[str, PidRecord]:
        """Records of processes that still run; pid files of dead ones are removed."""
        live: dict[str, PidRecord] = {}
        if not self.config.run_dir.is_dir():
            return live
        for path in sorted(self.config.run_dir.glob("*.pid")):
            record = PidRecord.load(path)
            if record is not None and processes.is_alive(record):
                live[record.name] = record
                continue
            if record is not None:
                processes.forget(record)
            path.unlink(missing_ok=True)
        return live

    def _check_conflicts(self, records: dict[str, PidRecord], wanted: dict[str, int]) -> None:
        for name, record in records.items():
            if record.profile != self.config.profile.value or wanted.get(name, record.port) != record.port:
                raise StackConflictError(
                    f"{self.config.run_dir} already runs a {record.profile} stack "
                    f"({name} on port {record.port}, pid {record.pid}); run `seglog down` first, or use "
                    f"another run dir for this {self.config.profile.value} stack on the ports you chose"
                )

    def _probe(self, name: str, port: int) -> bool:
        url = self.config.url(port)
        if name == DYNAMODB_LOCAL:
            return health.dynamodb_ready(url, self.config.region)
        return health.localstack_ready(url, self.config.profile.localstack_services)

    def _reusable(self, record: PidRecord | None) -> bool:
        """Whether a live process answers its probe (allowing a few seconds, e.g. while it starts)."""
        if record is None:
            return False
        deadline = time.monotonic() + REUSE_GRACE
        while True:
            if self._probe(record.name, record.port):
                return True
            if time.monotonic() > deadline or not processes.is_alive(record):
                return False
            time.sleep(0.5)

    def _info(self, records: dict[str, PidRecord], *, healthy: dict[str, bool]) -> StackInfo:
        ports = self._wanted_ports() | {name: r.port for name, r in records.items()}
        config = dataclasses.replace(
            self.config,
            localstack_port=ports[LOCALSTACK],
            dynamodb_port=ports.get(DYNAMODB_LOCAL, self.config.dynamodb_port),
        )
        infos = tuple(
            ProcessInfo(
                name=name,
                pid=records[name].pid if name in records else None,
                port=port,
                log_path=str(self._log_path(name)),
                running=name in records,
                healthy=bool(healthy.get(name)) and name in records,
            )
            for name, port in ports.items()
        )
        return StackInfo(
            profile=self.config.profile,
            region=self.config.region,
            endpoints=config.endpoints,
            processes=infos,
            run_dir=str(self.config.run_dir),
        )

    # -- starting -----------------------------------------------------------------------------------------

    def _start(self, names: list[str], records: dict[str, PidRecord]) -> None:
        """Install if needed, check the ports, start ``names`` and wait until all are healthy.

        On failure, the processes started here are stopped again, so no half stack is left behind.
        """
        wanted = self._wanted_ports()
        for name in names:
            # Probe the wildcard address: both servers listen on every interface (see _spawn_localstack).
            if not health.port_is_free("0.0.0.0", wanted[name]):
                env_var = LOCALSTACK_PORT_ENV if name == LOCALSTACK else DYNAMODB_PORT_ENV
                raise PortInUseError(port=wanted[name], service=name, env_var=env_var)
        installation = self.install()
        log.info(
            "stack.up.starting",
            profile=self.config.profile.value,
            processes=names,
            run_dir=str(self.config.run_dir),
        )
        started: list[PidRecord] = []
        try:
            for name in names:
                spawn = self._spawn_localstack if name == LOCALSTACK else self._spawn_dynamodb_local
                record = spawn(installation, wanted[name])
                record.save(self._pid_path(name))
                started.append(record)
                records[name] = record
            deadline = time.monotonic() + self.config.startup_timeout
            for record in started:
                self._wait_ready(record, deadline)
        except BaseException:
            for record in started:
                processes.stop(record, timeout=5.0)
                self._pid_path(record.name).unlink(missing_ok=True)
                records.pop(record.name, None)
            raise

    def _spawn_localstack(self, installation: Installation, port: int) -> PidRecord:
        root = self.config.run_dir / "localstack-fs"
        # This stack's own FILESYSTEM_ROOT, sharing only var_libs (the installed programs) with the home.
        link = root / installation.var_libs_relative
        if not (link.is_symlink() and link.resolve() == installation.var_libs.resolve()):
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            link.unlink(missing_ok=True)
            link.symlink_to(installation.var_libs)
        env = {**clean_python_env(os.environ), **localstack_process_env(self.config, root, port)}
        argv = [str(installation.localstack_python), "-I", "-m", "localstack.runtime.main"]
        return processes.spawn(
            name=LOCALSTACK,
            argv=argv,
            env=env,
            cwd=self.config.run_dir,
            log_path=self._log_path(LOCALSTACK),
            port=port,
            profile=self.config.profile.value,
        )

    def _spawn_dynamodb_local(self, installation: Installation, port: int) -> PidRecord:
        ddb = installation.dynamodb_local_dir
        argv = [
            str(installation.java),
            f"-Djava.library.path={ddb / 'DynamoDBLocal_lib'}",
            "-jar",
            str(ddb / "DynamoDBLocal.jar"),
            "-inMemory",
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]
        env = {**os.environ, "JAVA_HOME": str(installation.java_home)}
        return processes.spawn(
            name=DYNAMODB_LOCAL,
            argv=argv,
            env=env,
            cwd=self.config.run_dir,
            log_path=self._log_path(DYNAMODB_LOCAL),
            port=port,
            profile=self.config.profile.value,
        )

    def _wait_ready(self, record: PidRecord, deadline: float) -> None:
        """Poll until ``record``'s process is healthy; fail early if it exits, or at the deadline."""
        checks: list[Callable[[], bool]] = [lambda: self._probe(record.name, record.port)]
        if record.name == LOCALSTACK and not self.config.profile.runs_dynamodb_local:
            # "available" only means LocalStack will start DynamoDB Local on first use: make that first call
            # now, so a broken Java or jar fails `up` rather than the first test.
            checks.append(lambda: health.dynamodb_ready(self.config.url(record.port), self.config.region, timeout=10.0))
        log_path = Path(record.log_path)
        for check in checks:
            while not check():
                if not processes.is_alive(record):
                    code = processes.exit_code(record)
                    raise StackStartError(
                        f"{record.name} exited during startup" + (f" with code {code}" if code is not None else ""),
                        process=record.name,
                        log_path=log_path,
                        log_tail=processes.tail(log_path),
                    )
                if time.monotonic() > deadline:
                    raise StackStartError(
                        f"{record.name} on port {record.port} was not healthy after "
                        f"{self.config.startup_timeout:.0f} s",
                        process=record.name,
                        log_path=log_path,
                        log_tail=processes.tail(log_path),
                    )
                time.sleep(0.25)
        log.info("stack.process.healthy", process=record.name, port=record.port)
