"""What a chaos run injects: the kinds switched on, a probability each, the seed (DESIGN §7).

A plan comes from a file (TOML or JSON, the same shape) or from CLI-like flags::

    seed = 7
    rate = 0.05                     # for kinds that name no rate of their own

    [faults.worker_crash]
    rate = 0.2
    crash_points = ["after_claim", "mid_chunk"]

    [faults.s3_latency]
    latency_ms = [50, 500]          # the kind's amount range (kinds.AMOUNTS), inclusive

    [faults]
    ddb_throttle = 0.1              # shorthand: just the rate

    --faults worker_crash,ddb_throttle=0.3 --rate 0.1 --seed 7      # flags; "all" names every kind

A kind not in the plan never fires. Every problem in the input is reported at once (:class:`FaultPlanError`).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seglog_awsmodel.faults import AMOUNTS, EMULATED, FaultKind
from seglog_emulator.errors import FaultPlanError as FaultPlanError  # importable from here too

_SUFFIXES = (".toml", ".json")


@dataclass(frozen=True, kw_only=True)
class FaultSpec:
    """How one kind fires: with probability ``rate`` per decision site, drawing its amount from ``amount``
    (inclusive; ``None`` for kinds without one) and, for worker_crash, its point from ``crash_points``."""

    rate: float
    amount: tuple[int, int] | None = None
    crash_points: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class FaultPlan:
    """The kinds switched on (with how they fire) and the seed every decision derives from."""

    seed: int
    specs: Mapping[FaultKind, FaultSpec] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------ building

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "mapping") -> FaultPlan:
        """Read the file shape (module docstring) from parsed TOML/JSON.

        Raises:
            FaultPlanError: listing every problem in ``data``.
        """
        problems: list[str] = []
        if not isinstance(data, Mapping):
            raise FaultPlanError(source, [f"expected a table/object at the top, got {type(data).__name__}"])
        for key in sorted(set(data) - {"seed", "rate", "faults"}):
            problems.append(f"unknown top-level key {key!r}; expected seed, rate, faults")
        seed = data.get("seed")
        if not _is_int(seed):
            problems.append(f"seed must be an integer, got {seed!r}")
        default_rate = data.get("rate")
        if default_rate is not None and not _is_rate(default_rate):
            problems.append(f"rate must be a number from 0 to 1, got {default_rate!r}")
            default_rate = None
        faults = data.get("faults", {})
        specs: dict[FaultKind, FaultSpec] = {}
        if not isinstance(faults, Mapping):
            problems.append(f"faults must be a table/object of kind -> settings, got {type(faults).__name__}")
            faults = {}
        for name, settings in faults.items():
            kind = _kind(name, problems)
            if kind is not None:
                spec = _spec(kind, settings, default_rate, problems)
                if spec is not None:
                    specs[kind] = spec
        if problems:
            raise FaultPlanError(source, problems)
        assert isinstance(seed, int)
        return cls(seed=seed, specs=specs)

    @classmethod
    def from_file(cls, path: str | Path) -> FaultPlan:
        """Read a ``.toml`` or ``.json`` plan.

        Raises:
            FaultPlanError: the file is missing, unparsable or holds a bad plan.
        """
        path = Path(path)
        source = str(path)
        if path.suffix not in _SUFFIXES:
            raise FaultPlanError(source, [f"unknown file type {path.suffix!r}; name it *.toml or *.json"])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FaultPlanError(source, [f"cannot read it: {exc.strerror or exc}"]) from exc
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise FaultPlanError(source, [f"not valid {path.suffix[1:].upper()}: {exc}"]) from exc
        return cls.from_mapping(data, source=source)

    @classmethod
    def from_flags(cls, faults: str, *, rate: float, seed: int) -> FaultPlan:
        """The plan of ``--faults KIND[=RATE],... --rate RATE --seed SEED`` ("all" names every kind).

        Raises:
            FaultPlanError: unknown kinds, rates outside 0..1.
        """
        problems: list[str] = []
        table: dict[str, Any] = {}
        for item in (part.strip() for part in faults.split(",")):
            if not item:
                continue
            name, sep, value = item.partition("=")
            one: Any = rate
            if sep:
                try:
                    one = float(value)
                except ValueError:
                    problems.append(f"{item!r}: the rate after '=' must be a number")
                    continue
            if name.strip() == "all":
                table.update({kind.value: one for kind in EMULATED})
            else:
                table[name.strip()] = one
        try:
            plan = cls.from_mapping({"seed": seed, "rate": rate, "faults": table}, source="--faults")
        except FaultPlanError as exc:
            problems.extend(exc.problems)
            plan = None
        if problems or plan is None:
            raise FaultPlanError("--faults", problems)
        return plan

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> FaultPlan:
        """Parse ``--faults``, ``--rate`` (default 0.1), ``--seed`` (default 0) and ``--fault-plan FILE``
        (which the other flags then may not accompany) from a command line.

        Raises:
            FaultPlanError: unknown flags, missing values, or a bad plan.
        """
        values: dict[str, str] = {}
        problems: list[str] = []
        args = list(argv)
        i = 0
        while i < len(args):
            flag, sep, value = args[i].partition("=")
            if flag not in ("--faults", "--rate", "--seed", "--fault-plan"):
                problems.append(f"unknown argument {args[i]!r}; expected --faults, --rate, --seed, --fault-plan")
                i += 1
                continue
            if not sep:
                if i + 1 >= len(args):
                    problems.append(f"{flag} needs a value")
                    break
                i += 1
                value = args[i]
            values[flag] = value
            i += 1
        if "--fault-plan" in values:
            if len(values) > 1:
                problems.append("--fault-plan reads everything from the file; drop --faults, --rate and --seed")
            if problems:
                raise FaultPlanError("command line", problems)
            return cls.from_file(values["--fault-plan"])
        rate, seed = 0.1, 0
        try:
            rate = float(values.get("--rate", "0.1"))
        except ValueError:
            problems.append(f"--rate must be a number, got {values['--rate']!r}")
        try:
            seed = int(values.get("--seed", "0"))
        except ValueError:
            problems.append(f"--seed must be an integer, got {values['--seed']!r}")
        if "--faults" not in values:
            problems.append("--faults is required (comma-separated kinds, or all)")
        if problems:
            raise FaultPlanError("command line", problems)
        return cls.from_flags(values["--faults"], rate=rate, seed=seed)

    # ------------------------------------------------------------------------------------------ writing

    def to_mapping(self) -> dict[str, Any]:
        """The file shape of this plan (what :meth:`from_mapping` reads back to an equal plan)."""
        faults: dict[str, Any] = {}
        for kind in EMULATED:
            spec = self.specs.get(kind)
            if spec is None:
                continue
            entry: dict[str, Any] = {"rate": spec.rate}
            if spec.amount is not None:
                entry[AMOUNTS[kind][0]] = list(spec.amount)
            if kind is FaultKind.WORKER_CRASH and spec.crash_points:
                entry["crash_points"] = list(spec.crash_points)
            faults[kind.value] = entry
        return {"seed": self.seed, "faults": faults}

    def dump(self, path: str | Path) -> None:
        """Write the plan as ``.toml`` or ``.json`` (by the suffix), to replay a run from its seed."""
        path = Path(path)
        if path.suffix not in _SUFFIXES:
            raise FaultPlanError(str(path), [f"unknown file type {path.suffix!r}; name it *.toml or *.json"])
        data = self.to_mapping()
        if path.suffix == ".json":
            path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            return
        # The shape is flat enough that JSON's scalars and arrays are valid TOML values.
        lines = [f"seed = {self.seed}"]
        for name, entry in data["faults"].items():
            lines += ["", f"[faults.{name}]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def enabled(self, kind: FaultKind) -> bool:
        """Whether ``kind`` can fire at all."""
        spec = self.specs.get(kind)
        return spec is not None and spec.rate > 0


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_rate(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _kind(name: object, problems: list[str]) -> FaultKind | None:
    if not isinstance(name, str):
        problems.append(f"fault kinds are names, got {name!r}")
        return None
    if name not in EMULATED:
        problems.append(f"unknown fault kind {name!r}; known: {', '.join(EMULATED)}"
                        + (" (the simulator's kinds crash, pause and sqs_error are not emulated)"
                           if name in FaultKind else ""))
        return None
    return FaultKind(name)


def _spec(kind: FaultKind, settings: object, default_rate: object, problems: list[str]) -> FaultSpec | None:
    if _is_rate(settings):
        settings = {"rate": settings}
    if not isinstance(settings, Mapping):
        problems.append(f"{kind}: expected a rate (0..1) or a table of settings, got {settings!r}")
        return None
    amount_name = AMOUNTS[kind][0] if kind in AMOUNTS else None
    allowed = {"rate"} | ({amount_name} if amount_name else set())
    if kind is FaultKind.WORKER_CRASH:
        allowed.add("crash_points")
    for key in sorted(set(settings) - allowed):
        problems.append(f"{kind}: unknown setting {key!r}; allowed: {', '.join(sorted(allowed))}")
    rate = settings.get("rate", default_rate)
    if rate is None:
        problems.append(f"{kind}: no rate (set one here or a top-level rate)")
    elif not _is_rate(rate):
        problems.append(f"{kind}: rate must be a number from 0 to 1, got {rate!r}")
    amount: tuple[int, int] | None = None
    if amount_name is not None:
        amount = AMOUNTS[kind][1]
        raw = settings.get(amount_name)
        if raw is not None:
            if (isinstance(raw, list) and len(raw) == 2 and all(_is_int(v) for v in raw)
                    and 0 <= raw[0] <= raw[1]):
                amount = (raw[0], raw[1])
            else:
                problems.append(f"{kind}: {amount_name} must be [low, high], integers with 0 <= low <= high, "
                                f"got {raw!r}")
    points: tuple[str, ...] = ()
    if kind is FaultKind.WORKER_CRASH and "crash_points" in settings:
        # Which names exist is the application's to say (template Metadata SeglogEmulator CrashPoints): checked
        # against the template by check_crash_points, where the emulator starts.
        raw_points = settings["crash_points"]
        if (not isinstance(raw_points, list) or not raw_points
                or not all(isinstance(p, str) and p for p in raw_points)):
            problems.append(f"{kind}: crash_points must be a non-empty list of point names; got {raw_points!r}")
        else:
            points = tuple(dict.fromkeys(raw_points))
    if not _is_rate(rate):
        return None
    assert isinstance(rate, int | float)
    return FaultSpec(rate=float(rate), amount=amount, crash_points=points)


def check_crash_points(plan: FaultPlan, declared: Mapping[str, Sequence[str]]) -> None:
    """Refuse a plan whose crash kinds cannot fire in this application: ``worker_crash`` or
    ``router_crash_after_send`` when no function declares crash points, or ``crash_points`` naming a point no
    function declares. ``declared``: each function's points (:func:`seglog_awsmodel.template.crash_points_of`).

    Raises:
        FaultPlanError: what is wrong, with the points the template declares.
    """
    known = list(dict.fromkeys(point for points in declared.values() for point in points))
    problems: list[str] = []
    for kind in (FaultKind.WORKER_CRASH, FaultKind.ROUTER_CRASH_AFTER_SEND):
        if kind in plan.specs and not known:
            problems.append(f"{kind}: this application declares no crash points (template Metadata "
                            "SeglogEmulator CrashPoints, with an InvocationHook): drop the kind from the plan")
    spec = plan.specs.get(FaultKind.WORKER_CRASH)
    unknown = [p for p in (spec.crash_points if spec else ()) if p not in known]
    if known and unknown:
        problems.append(f"{FaultKind.WORKER_CRASH}: crash_points {', '.join(unknown)} are not declared; the "
                        f"template declares {', '.join(known)}")
    if problems:
        raise FaultPlanError("the fault plan", problems)

