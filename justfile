# seglog recipes for people who have `just`; each wraps ./dev, which works without it.

# --- main job -------------------------------------------------------------------------------------------

# Local stack up, a sheet, concurrent clients editing it, the result verified
demo *args:
    ./dev demo {{args}}

# --- local stack ----------------------------------------------------------------------------------------

# Start (or reuse) the local stack and provision template.yaml onto it
up *args:
    ./dev up {{args}}

# Stop the local stack
down:
    ./dev down

# Endpoints, processes and resource names
status:
    ./dev status

# --- checks ---------------------------------------------------------------------------------------------

# The whole test suite (the tests start the local stack themselves)
test *args:
    ./dev test {{args}}

# Only the fast in-memory tests
test-fast:
    ./dev test -m "not stack"

# ruff, mypy, cfn-lint, checkov (on the template after the SAM transform)
lint:
    ./dev lint

# Benchmarks that print figures
bench *args:
    ./dev bench {{args}}
