"""The Docker path (DESIGN §8): docker-compose.yml and the Dockerfile run the same stack and emulator as host mode.

Docker is optional here (the host-process stack is the default), so this file checks in two parts. The files'
consistency with the workspace (services, profiles, endpoints, ports, pins, no registry host, the LocalStack auth
token required) always runs. The containers themselves run where a Docker daemon answers and LOCALSTACK_AUTH_TOKEN
is set: compose brings up a profile's stack with the emulator built from the Dockerfile, one sheet is created,
appended to and snapshotted through the gateway's HTTP API, and the log is verified. Without a daemon or the token
that test skips, unless SEGLOG_TEST_DOCKER=1 insists: then it fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import tomllib
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from seglog_awsmodel.template import load_template
from seglog_cli.emulator_commands import emulate
from seglog_core.verify import verify_log
from seglog_plugin.resources import backend_of
from seglog_stack import DYNAMODB_PORT_ENV, LOCALSTACK_PORT_ENV, SERVICES, Profile, docker_available, local
from seglog_stack.config import DEFAULT_REGION
from seglog_stack.info import ENDPOINT_ENV, stack_env
from seglog_stack.local import LocalDeployment
from signed_http import call, send

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "docker-compose.yml"
#: The SDK's variable for every service at once; ENDPOINT_ENV has the per-service ones.
ENDPOINT_URL_ENV = "AWS_ENDPOINT_URL"
EMULATOR_PORT_ENV = "SEGLOG_EMULATOR_PORT"
SNAPSHOT_EVERY_ENV = "SEGLOG_SNAPSHOT_EVERY"
#: LocalStack's account credential: its images start only with it (LocalStack docs, "Auth Token").
AUTH_TOKEN_ENV = "LOCALSTACK_AUTH_TOKEN"
#: Options of a package index (pip, uv): a file of the Docker path names none (the rule: no registry host).
INDEX_OPTIONS = ("index-url", "--index", "extra-index", "UV_INDEX", "PIP_INDEX", "find-links", "trusted-host")


# ----------------------------------------------------------------------------------------- the files


@cache
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return loaded


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def in_profile(profile: Profile) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services().items() if profile.value in s.get("profiles", ())}


def emulator(profile: Profile) -> tuple[str, dict[str, Any]]:
    """The service of ``profile`` built from the repo (the emulator), by name."""
    built = [(name, s) for name, s in in_profile(profile).items() if "build" in s]
    assert 1 == len(built), f"profile {profile}: expected one emulator service, found {[n for n, _ in built]}"
    return built[0]


def localstack_service(profile: Profile) -> tuple[str, dict[str, Any]]:
    found = [(name, s) for name, s in in_profile(profile).items() if s["image"].startswith("localstack/localstack:")]
    assert 1 == len(found), f"profile {profile}: expected one LocalStack service, found {[n for n, _ in found]}"
    return found[0]


def option(command: list[str], name: str) -> str:
    """The value after ``name`` in a command line."""
    assert name in command, f"{name} missing from {command}"
    return command[command.index(name) + 1]


def published_port(spec: str) -> tuple[str, str, int]:
    """``HOST_IP:HOST_PORT:CONTAINER_PORT`` (the host port may be an interpolation) as its three parts."""
    ip, sep, rest = spec.partition(":")
    host_port, sep2, container = rest.rpartition(":")
    assert sep and sep2, f"{spec!r}: expected host ip, host port and container port"
    return ip, host_port, int(container)


def container_port(service: dict[str, Any]) -> int:
    (spec,) = service["ports"]
    return published_port(spec)[2]


def interpolation_default(value: str, variable: str) -> str:
    """The default of ``${variable:-default}`` in ``value``."""
    match = re.search(r"\$\{" + re.escape(variable) + r":-([^}]*)\}", value)
    assert match, f"{value!r} does not take ${{{variable}:-...}}"
    return match.group(1)


def dockerfile(service: dict[str, Any]) -> Path:
    build: dict[str, str] = service["build"]
    return (COMPOSE_FILE.parent / build["context"] / build.get("dockerfile", "Dockerfile")).resolve()


def instructions(path: Path) -> list[tuple[str, str]]:
    """A Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined, comments left out."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines()
                                            if not line.lstrip().startswith("#")))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def registry_of(image: str) -> str | None:
    """The registry host an image reference names, or None (Docker's rule: a first path component with a dot or
    a colon, or ``localhost``, is a host)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def workspace_members() -> set[str]:
    root = tomllib.loads((REPO / "pyproject.toml").read_text())
    members: set[str] = set()
    for pattern in root["tool"]["uv"]["workspace"]["members"]:
        members |= {str(p.parent.relative_to(REPO)) for p in REPO.glob(f"{pattern}/pyproject.toml")}
    return members


def cli_project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((REPO / "packages/cli/pyproject.toml").read_text())["project"]
    return project


#: Profiles that run the emulator; the deploy target runs the template's functions in LocalStack's own Lambda.
PROFILES = [pytest.param(p, id=p.value) for p in Profile if p is not Profile.DEPLOY]


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_runs_one_emulator_built_from_the_repos_dockerfile(profile: Profile) -> None:
    _, service = emulator(profile)
    assert "." == service["build"]["context"]
    assert dockerfile(service).is_file(), f"{dockerfile(service)} does not exist"
    # Rebuilt on every `up`, so the containers run the tree's code, not a stale image.
    assert "build" == service["pull_policy"]


@pytest.mark.parametrize("profile", PROFILES)
def test_the_emulator_waits_for_its_profiles_stack(profile: Profile) -> None:
    """Compose never has to start a service of another profile, and the emulator provisions only once
    LocalStack reports healthy."""
    _, service = emulator(profile)
    stack = in_profile(profile)
    assert set(service["depends_on"]) <= set(stack), "every dependency is in the emulator's profile"
    name, localstack = localstack_service(profile)
    assert "healthcheck" in localstack
    assert {"condition": "service_healthy"} == service["depends_on"][name]
    if profile.runs_dynamodb_local:
        assert "dynamodb-local" in service["depends_on"]
    for other in services().values():
        for dependency in other.get("depends_on", {}):
            assert set(other["profiles"]) <= set(services()[dependency]["profiles"])


def serves(service: dict[str, Any]) -> set[str]:
    """The AWS services (boto3 names) a compose service serves."""
    if service["image"].startswith("localstack/localstack:"):
        return set(service["environment"]["SERVICES"].split(","))
    if service["image"].startswith("amazon/dynamodb-local:"):
        return {"dynamodb", "dynamodbstreams"}
    return set()


@pytest.mark.parametrize("profile", PROFILES)
def test_the_emulator_reaches_each_aws_service_where_its_profile_serves_it(profile: Profile) -> None:
    """Endpoints resolve as the SDKs resolve them (DESIGN §8): AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL;
    each must be a service of the profile that serves that AWS service, on its container port."""
    _, service = emulator(profile)
    env = service["environment"]
    stack = in_profile(profile)
    for aws_service in SERVICES:
        url = env.get(ENDPOINT_ENV[aws_service]) or env[ENDPOINT_URL_ENV]
        match = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", url)
        assert match, f"{aws_service}: {url!r} is not http://<compose service>:<port>"
        host, port = match.group(1), int(match.group(2))
        assert host in stack, f"{aws_service}: {host} is not a service of profile {profile}"
        assert aws_service in serves(stack[host]), f"{host} does not serve {aws_service}"
        assert container_port(stack[host]) == port
    # DynamoDB and its streams from one place, as StackConfig.endpoints gives them in host mode.
    assert env.get(ENDPOINT_ENV["dynamodb"]) == env.get(ENDPOINT_ENV["dynamodbstreams"])
    assert profile.runs_dynamodb_local == (ENDPOINT_ENV["dynamodb"] in env)
    # `seglog emulate --endpoint-url` provisions and runs against the same stack the SDK variables name.
    assert env[ENDPOINT_URL_ENV] == option(service["command"], "--endpoint-url")


@pytest.mark.parametrize("profile", PROFILES)
def test_the_emulators_environment_is_what_seglog_env_exports(profile: Profile) -> None:
    _, service = emulator(profile)
    env = service["environment"]
    endpoint_vars = {k for k in env if k.startswith(ENDPOINT_URL_ENV)}
    assert endpoint_vars <= {ENDPOINT_URL_ENV, *ENDPOINT_ENV.values()}, "only the SDK's own endpoint variables"
    expected = stack_env({}, DEFAULT_REGION)
    assert expected == {k: env[k] for k in expected}
    # Read by `seglog --profile` (envvar): the deployment records which profile it runs on.
    assert profile.value == env["SEGLOG_PROFILE"]


@pytest.mark.parametrize("profile", PROFILES)
def test_the_gateway_listens_on_seglog_emulates_port_published_on_localhost(profile: Profile) -> None:
    _, service = emulator(profile)
    command = service["command"]
    assert "emulate" == command[0]
    default = next(p.default for p in emulate.params if p.name == "port")
    port = int(option(command, "--port"))
    assert default == port
    assert "0.0.0.0" == option(command, "--host"), "reachable through the published port"
    (spec,) = service["ports"]
    ip, host_port, inside = published_port(spec)
    assert ("127.0.0.1", port) == (ip, inside)
    assert str(default) == interpolation_default(host_port, EMULATOR_PORT_ENV)
    assert f"('127.0.0.1', {port})" in " ".join(service["healthcheck"]["test"])
    expose = [args for keyword, args in instructions(dockerfile(service)) if keyword == "EXPOSE"]
    assert [str(port)] == expose


@pytest.mark.parametrize("profile", PROFILES)
def test_snapshot_every_defaults_to_the_templates(profile: Profile) -> None:
    _, service = emulator(profile)
    parameter = option(service["command"], "--parameter")
    assert parameter.startswith("SnapshotEvery=")
    default = interpolation_default(parameter, SNAPSHOT_EVERY_ENV)
    assert load_template().parameters["SnapshotEvery"] == int(default)


def test_the_stack_ports_follow_the_host_modes_variables() -> None:
    for profile in Profile:
        _, localstack = localstack_service(profile)
        (spec,) = localstack["ports"]
        assert "4566" == interpolation_default(published_port(spec)[1], LOCALSTACK_PORT_ENV)
    (spec,) = services()["dynamodb-local"]["ports"]
    assert "8000" == interpolation_default(published_port(spec)[1], DYNAMODB_PORT_ENV)


def test_every_localstack_service_requires_the_auth_token_and_says_what_to_do_without_it() -> None:
    """LocalStack's images start only with LOCALSTACK_AUTH_TOKEN set (LocalStack docs, "Auth Token": "a mandatory
    credential required to start the LocalStack container"). Compose's ``${VAR:?message}`` refuses the file with
    the message when the variable is unset or empty, before any image is pulled, instead of a container that
    exits after its start; the message names the variable and the way without Docker."""
    for profile in Profile:
        name, service = localstack_service(profile)
        value = service["environment"][AUTH_TOKEN_ENV]
        match = re.fullmatch(r"\$\{" + AUTH_TOKEN_ENV + r":\?([^}]+)\}", value)
        assert match, f"{name}: {AUTH_TOKEN_ENV} is {value!r}, not required with ${{{AUTH_TOKEN_ENV}:?message}}"
        assert AUTH_TOKEN_ENV in match.group(1) and "./dev up" in match.group(1), match.group(1)


def test_every_image_is_pinned_to_an_explicit_tag_and_names_no_registry() -> None:
    froms = [args.split()[0] for keyword, args in instructions(REPO / "Dockerfile") if keyword == "FROM"]
    images = [s["image"] for s in services().values()] + froms
    for image in images:
        _, sep, tag = image.rpartition(":")
        assert sep and "/" not in tag and tag not in ("", "latest"), f"{image}: pin an explicit tag"
        assert registry_of(image) is None, f"{image}: names a registry host"
    # The emulator's image carries the workspace's version; its base is the Python the workspace requires.
    for param in PROFILES:
        assert f"seglog-emulator:{cli_project()['version']}" == emulator(param.values[0])[1]["image"]
    (base,) = froms
    required = cli_project()["requires-python"].removeprefix(">=")
    assert base.startswith(f"python:{required}-")


def test_the_dockerfile_installs_the_workspace_as_dev_does() -> None:
    steps = instructions(REPO / "Dockerfile")
    text = (REPO / "Dockerfile").read_text()
    # The uv that ./dev installs.
    (dev_uv,) = re.findall(r"^UV_VERSION=(\S+)$", (REPO / "dev").read_text(), re.MULTILINE)
    assert [f"UV_VERSION={dev_uv}"] == [args for keyword, args in steps if keyword == "ARG"]
    assert '"uv==${UV_VERSION}"' in text
    # Every workspace member's pyproject.toml goes into the dependency layer (a new member is noticed here).
    copied = {m.group(1) for m in re.finditer(r"^COPY \S+ (\S+)/pyproject\.toml ", text, re.MULTILINE)}
    assert workspace_members() == copied
    syncs = [shlex.split(args) for keyword, args in steps if keyword == "RUN" and "uv sync" in args]
    assert 2 == len(syncs)
    for sync in syncs:
        assert {"--all-packages", "--no-dev"} <= set(sync)
    # The entrypoint is the workspace's console script.
    assert [json.dumps(["seglog"])] == [args for keyword, args in steps if keyword == "ENTRYPOINT"]
    assert "seglog" in cli_project()["scripts"]


def test_the_build_context_leaves_out_lock_files_and_machine_state() -> None:
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    git_ignored = {line.strip().rstrip("/") for line in (REPO / ".gitignore").read_text().splitlines()
                   if line.strip() and not line.startswith("#")}
    lock_files = {name for name in git_ignored if name.endswith(".lock") or name.endswith("-lock.json")}
    assert {"uv.lock"} <= lock_files
    assert lock_files | {".venv", ".seglog", ".git"} <= ignored


def test_no_file_of_the_docker_path_names_a_package_index_or_a_foreign_host() -> None:
    """Every URL is a compose service or the loopback address; no index option is set (the repo's rule)."""
    allowed = set(services()) | {"127.0.0.1"}
    for path in (COMPOSE_FILE, REPO / "Dockerfile", REPO / ".dockerignore"):
        text = path.read_text()
        for index_option in INDEX_OPTIONS:
            assert index_option.lower() not in text.lower(), f"{path.name} sets {index_option}"
        for host in re.findall(r"[a-z][a-z0-9+.-]*://([^/:'\"\s]+)", text):
            assert host in allowed, f"{path.name} names {host}"


# ----------------------------------------------------------------------------------------- the containers

#: SEGLOG_TEST_DOCKER=1 insists on Docker (fails without a daemon), =0 leaves it out, unset: where it answers.
USE_DOCKER = {"1": True, "0": False}.get(os.environ.get("SEGLOG_TEST_DOCKER", ""))
_BASE = int(os.environ.get("SEGLOG_TEST_PORT_BASE", "4640"))
#: LocalStack, DynamoDB Local and gateway ports per profile: beside conftest's test stacks (base, base+10,
#: base+3400, base+3410), so both can run in one session.
DOCKER_PORTS = {Profile.DYNAMODB_LOCAL: (_BASE + 20, _BASE + 3420, _BASE + 21),
                Profile.LOCALSTACK: (_BASE + 30, _BASE + 3430, _BASE + 31)}
#: The template's minimum: the writer of entry num 10 appends a Snapshot entry.
SNAPSHOT_EVERY = 10


def require_docker() -> None:
    if USE_DOCKER is False:
        pytest.skip("SEGLOG_TEST_DOCKER=0: the Docker path is left out")
    if not docker_available():
        if USE_DOCKER:
            pytest.fail("SEGLOG_TEST_DOCKER=1 but no Docker daemon answers `docker info`: start Docker, or unset "
                        "SEGLOG_TEST_DOCKER to run the stack tests on host processes")
        pytest.skip("no Docker daemon answers `docker info`: Docker is optional (the host-process stack is the "
                    "default); set SEGLOG_TEST_DOCKER=1 to make this a failure")
    if not os.environ.get(AUTH_TOKEN_ENV):
        why = f"{AUTH_TOKEN_ENV} is not set: LocalStack's images start only with an account's auth token"
        if USE_DOCKER:
            pytest.fail(f"SEGLOG_TEST_DOCKER=1 but {why}; export it, or unset SEGLOG_TEST_DOCKER")
        pytest.skip(f"{why} (docker-compose.yml); set SEGLOG_TEST_DOCKER=1 to make this a failure")


def wait_for_gateway(api: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if 200 == call("GET", f"{api}/openapi.json")[0]:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the emulator's gateway at {api} did not answer within {timeout:.0f} s")
        time.sleep(0.5)


def create_append_snapshot_verify(api: str, deployment: LocalDeployment, timeout: float = 120.0) -> None:
    """Create a sheet, append SNAPSHOT_EVERY entries through the gateway, wait until the pipeline (stream
    router, queue, snapshot worker) has completed the Snapshot entry the last append asked for, then verify
    the log with the stores directly. The requests are signed (the API's routes require IAM authorization); an
    unsigned one is refused as API Gateway refuses it."""
    refused = send("POST", f"{api}/sheets", b"{}")
    assert (403, {"message": "Forbidden"}) == (refused.status, refused.json)
    status, created = call("POST", f"{api}/sheets")
    assert 201 == status, created
    log_id = uuid.UUID(created["log_id"])
    acknowledged = []
    for i in range(SNAPSHOT_EVERY):
        entry_id = uuid.uuid4()
        status, appended = call("POST", f"{api}/sheets/{log_id}/entries",
                                {"entry": {"type": "set", "ref": f"A{i + 1}", "value": i}, "entry_id": str(entry_id)})
        assert 200 == status, appended
        assert (0, i + 1) == (appended["segment"], appended["num"])
        acknowledged.append(entry_id)

    deadline = time.monotonic() + timeout
    while True:
        status, snapshots = call("GET", f"{api}/sheets/{log_id}/snapshots")
        assert 200 == status, snapshots
        if snapshots["latest"] not in (None, {"segment": 0, "num": 0}) and not snapshots["pending"]:
            break
        assert time.monotonic() < deadline, f"no snapshot completed within {timeout:.0f} s: {snapshots}"
        time.sleep(0.5)
    # Entry nums 1..10 are the appends; the writer of num 10 appended the Snapshot entry num 11.
    assert {"segment": 0, "num": SNAPSHOT_EVERY + 1} == snapshots["latest"]

    status, loaded = call("GET", f"{api}/sheets/{log_id}")
    assert 200 == status, loaded
    assert snapshots["latest"] == {k: loaded["snapshot"][k] for k in ("segment", "num")}

    backend = backend_of(deployment)
    report = verify_log(backend.store, log_id, acknowledged=acknowledged, blobs=backend.blobs,
                        pending=backend.pending, quiescent=True)
    assert [] == [v.to_dict() for v in report.violations]
    assert (SNAPSHOT_EVERY + 2, 2, 2) == (report.entries, report.snapshots, report.completed)


@pytest.mark.stack
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("profile", PROFILES)
def test_compose_runs_the_emulator_and_a_snapshot_completes_through_its_gateway(
        profile: Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    require_docker()
    from testcontainers.compose import DockerCompose

    ls_port, ddb_port, api_port = DOCKER_PORTS[profile]
    # A project of its own: conftest's compose stacks (same file, same directory) are left alone.
    monkeypatch.setenv("COMPOSE_PROJECT_NAME", f"seglog-docker-path-{profile.value}")
    monkeypatch.setenv(LOCALSTACK_PORT_ENV, str(ls_port))
    monkeypatch.setenv(DYNAMODB_PORT_ENV, str(ddb_port))
    monkeypatch.setenv(EMULATOR_PORT_ENV, str(api_port))
    monkeypatch.setenv(SNAPSHOT_EVERY_ENV, str(SNAPSHOT_EVERY))
    stack = DockerCompose(context=str(REPO), compose_file_name=COMPOSE_FILE.name, profiles=[profile.value],
                          build=True, wait=True)
    try:
        stack.start()
        api = f"http://127.0.0.1:{api_port}"
        wait_for_gateway(api)
        ls = f"http://127.0.0.1:{ls_port}"
        ddb = f"http://127.0.0.1:{ddb_port}" if profile.runs_dynamodb_local else ls
        # The emulator provisioned the template under the default stack name; provisioning is idempotent, so
        # this only reads the physical names back, through the published ports.
        deployment = local.provision({"dynamodb": ddb, "dynamodbstreams": ddb, "sqs": ls, "s3": ls},
                                     profile=profile.value, region=DEFAULT_REGION,
                                     parameters={"SnapshotEvery": SNAPSHOT_EVERY})
        create_append_snapshot_verify(api, deployment)
    except BaseException:
        try:
            print(stack.get_logs()[0])
        except Exception as exc:  # the logs only help; the first failure is the one to report
            print(f"(no compose logs: {exc})")
        raise
    finally:
        stack.stop()
