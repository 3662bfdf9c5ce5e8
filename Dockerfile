# The seglog command in a container, for docker-compose.yml's emulator services (`seglog emulate` against the
# LocalStack / DynamoDB Local containers). The workspace is installed the way ./dev installs it, with uv and
# the versions pinned in pyproject.toml, less the dev group. Packages come from pip's and uv's default index:
# no index is named here, and no lock file is copied in (.dockerignore), as in a fresh clone.
#
#   docker build -t seglog-emulator:0.1.0 .     # or: docker compose --profile dynamodb-local up --build
#   docker run --rm seglog-emulator:0.1.0 --help

FROM python:3.13-slim

# The uv that ./dev pins (UV_VERSION there).
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir --disable-pip-version-check "uv==${UV_VERSION}"

# Python is the image's (never a download); bytecode compiled at install so the first invocation is not slower.
ENV UV_PYTHON=/usr/local/bin/python3.13 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    PYTHONUNBUFFERED=1

RUN useradd --create-home --uid 10001 seglog && install -d -o seglog -g seglog /app
WORKDIR /app
USER seglog

# Dependencies first, from the workspace's pyproject files only: this layer is rebuilt only when they change.
COPY --chown=seglog:seglog pyproject.toml ./
COPY --chown=seglog:seglog packages/core/pyproject.toml packages/core/
COPY --chown=seglog:seglog packages/aws_adapter/pyproject.toml packages/aws_adapter/
COPY --chown=seglog:seglog packages/stack/pyproject.toml packages/stack/
COPY --chown=seglog:seglog packages/deploy/pyproject.toml packages/deploy/
COPY --chown=seglog:seglog packages/awsmodel/pyproject.toml packages/awsmodel/
COPY --chown=seglog:seglog packages/emulator/pyproject.toml packages/emulator/
COPY --chown=seglog:seglog packages/sim/pyproject.toml packages/sim/
COPY --chown=seglog:seglog packages/report/pyproject.toml packages/report/
COPY --chown=seglog:seglog packages/cli/pyproject.toml packages/cli/
COPY --chown=seglog:seglog packages/client/pyproject.toml packages/client/
COPY --chown=seglog:seglog packages/plugin/pyproject.toml packages/plugin/
COPY --chown=seglog:seglog services/pyproject.toml services/
RUN uv sync --all-packages --no-dev --no-install-workspace

# Then the workspace itself (.dockerignore leaves out the venv, caches, tests and lock files).
COPY --chown=seglog:seglog . .
RUN uv sync --all-packages --no-dev && .venv/bin/seglog --help >/dev/null
# The functions' Lambda artifact for this image's architecture: the emulator's workers import it, not the
# sources (DESIGN §10.1), and a container should not have to build it at its first start.
RUN .venv/bin/seglog build --arch "$(uname -m | sed 's/aarch64/arm64/')" >/dev/null

ENV PATH=/app/.venv/bin:$PATH
# `seglog emulate --port` (the HTTP gateway).
EXPOSE 4599
ENTRYPOINT ["seglog"]
CMD ["--help"]
