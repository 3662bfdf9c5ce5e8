"""IAM enforced in the emulator (DESIGN §10.2): every AWS call a function makes is evaluated against that
function's policies from template.yaml with AWS's evaluation logic, and a denied call fails as on AWS.

By role:

* :mod:`~seglog_emulator.iam.patterns`, :mod:`~seglog_emulator.iam.conditions`, :mod:`~seglog_emulator.iam.policy`:
  policy documents compiled (Action/NotAction, Resource/NotResource, Principal, Condition);
* :mod:`~seglog_emulator.iam.evaluation`: AWS's evaluation logic, and a function's permissions;
* :mod:`~seglog_emulator.iam.roles` (with :mod:`~seglog_emulator.iam.intrinsics`): the permissions from the
  template, through the SAM transform;
* :mod:`~seglog_emulator.iam.operations`: which action on which resource each API operation needs;
* :mod:`~seglog_emulator.iam.guard`: the botocore hooks that deny a call with AWS's own error.

The invoker hands a worker process its function's permissions in :data:`ENV_VAR`; the worker removes the
variable before it imports the handler.
"""

from typing import Final

#: The environment variable (emulator-only) that carries a function's permissions to its worker processes.
ENV_VAR: Final = "SEGLOG_EMULATOR_IAM"
