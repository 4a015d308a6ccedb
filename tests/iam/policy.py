"""Reading and evaluating the IAM policies of synthesized templates, for the IAM tests.

`Templates` resolves the intrinsics CDK emits in role policies (Ref, Fn::GetAtt, Fn::Join,
Fn::Sub, Fn::GetStackOutput, SSM-backed parameters) into the ARNs they become in one test
account, and `evaluate` decides an action on a resource with a request context the way the
IAM policy evaluation logic documents it for identity policies of one account: an explicit
Deny wins, otherwise some Allow must match action, resource and every condition
(IAM User Guide, "Policy evaluation logic" and "IAM JSON policy elements: Condition
operators"). Only what benchstack's policies use is implemented; anything else raises,
so a new construct cannot pass by being misunderstood.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
PARTITION = "aws"


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


class Templates:
    """Every stack template of one synthesized app, keyed by stack name, with each stack's
    region (`regions`) and what SSM-backed parameters resolve to (`ssm`)."""

    def __init__(self, templates: dict[str, dict], regions: dict[str, str],
                 ssm: dict[str, str] | None = None):
        self.templates, self.regions, self.ssm = templates, regions, ssm or {}

    # ------------------------------------------------------------------ resolution

    def resolve(self, stack: str, value: Any) -> Any:
        template, region = self.templates[stack], self.regions[stack]
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return [self.resolve(stack, v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {k: self.resolve(stack, v) for k, v in value.items()}
        (fn, arg), = value.items()
        if fn == "Ref":
            return self._ref(stack, arg)
        if fn == "Fn::GetAtt":
            logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
            return self._get_att(stack, logical, attr)
        if fn == "Fn::Join":
            sep, parts = arg
            return sep.join(str(self.resolve(stack, p)) for p in parts)
        if fn == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else arg
            for name, v in names.items():
                text = text.replace("${" + name + "}", str(self.resolve(stack, v)))
            for name in ("AWS::Partition", "AWS::AccountId", "AWS::Region", "AWS::URLSuffix"):
                text = text.replace("${" + name + "}", self._ref(stack, name))
            return text
        if fn == "Fn::GetStackOutput":
            other = arg["StackName"]
            output = self.templates[other]["Outputs"][arg["OutputName"]]["Value"]
            return self.resolve(other, output)
        if fn == "Fn::Select":
            index, items = arg
            return self.resolve(stack, items)[int(index)]
        if fn.startswith("Fn::") or fn == "Condition":
            raise NotImplementedError(f"{stack}: intrinsic {fn} is not understood here")
        return {fn: self.resolve(stack, arg)}

    def _ref(self, stack: str, name: str) -> str:
        region = self.regions[stack]
        pseudo = {"AWS::Partition": PARTITION, "AWS::AccountId": ACCOUNT, "AWS::Region": region,
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": stack}
        if name in pseudo:
            return pseudo[name]
        template = self.templates[stack]
        if name in template.get("Parameters", {}):
            default = template["Parameters"][name].get("Default", name)
            return self.ssm.get(default, f"<{default}>")
        resource = template["Resources"][name]
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{region}:{ACCOUNT}:{props.get('TopicName', name)}"
        if kind == "AWS::IAM::Role":
            return props.get("RoleName", name)
        if kind == "AWS::Lambda::Function":
            return props.get("FunctionName", name)
        if kind == "AWS::S3::Bucket":
            return self.resolve(stack, props.get("BucketName", name.lower()))
        if kind == "AWS::Logs::LogGroup":
            return props.get("LogGroupName", name)
        return name

    def _get_att(self, stack: str, logical: str, attr: str) -> str:
        region = self.regions[stack]
        resource = self.templates[stack]["Resources"][logical]
        kind = resource["Type"]
        ref = self._ref(stack, logical)
        arns = {
            "AWS::Lambda::Function": f"arn:{PARTITION}:lambda:{region}:{ACCOUNT}:function:{ref}",
            "AWS::Logs::LogGroup": f"arn:{PARTITION}:logs:{region}:{ACCOUNT}:log-group:{ref}:*",
            "AWS::KMS::Key": f"arn:{PARTITION}:kms:{region}:{ACCOUNT}:key/{logical}",
            "AWS::IAM::Role": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{ref}",
            "AWS::S3::Bucket": f"arn:{PARTITION}:s3:::{ref}",
            "AWS::SNS::Topic": ref,
            "AWS::StepFunctions::StateMachine":
                f"arn:{PARTITION}:states:{region}:{ACCOUNT}:stateMachine:{logical}",
        }
        if attr == "Arn" and kind in arns:
            return arns[kind]
        return f"<{logical}.{attr}>"

    # ------------------------------------------------------------------ statements

    def role_statements(self, stack: str, role_prefix: str) -> list["Statement"]:
        """Every statement of the identity policies attached to the role whose logical id
        starts with `role_prefix` (CDK's DefaultPolicy and any other AWS::IAM::Policy)."""
        template = self.templates[stack]
        roles = [k for k, v in template["Resources"].items()
                 if v["Type"] == "AWS::IAM::Role" and k.startswith(role_prefix)]
        if len(roles) != 1:
            raise LookupError(f"{stack}: expected one role {role_prefix}*, found {roles}")
        found: list[Statement] = []
        for logical, resource in template["Resources"].items():
            if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                continue
            attached = json.dumps(resource["Properties"].get("Roles", []))
            if f'"{roles[0]}"' not in attached:
                continue
            for index, raw in enumerate(resource["Properties"]["PolicyDocument"]["Statement"]):
                found.append(Statement.parse(self.resolve(stack, raw),
                                             where=f"{stack}/{logical}#{index}"))
        for inline in template["Resources"][roles[0]].get("Properties", {}).get("Policies", []):
            where = f"{stack}/{roles[0]}/{inline['PolicyName']}"
            for index, raw in enumerate(inline["PolicyDocument"]["Statement"]):
                found.append(Statement.parse(self.resolve(stack, raw), where=f"{where}#{index}"))
        return found


def _arn_match(pattern: str, arn: str) -> bool:
    """ARN matching: `*` and `?` within each of the first five segments; the resource part
    (which may hold `:` and `/`) as a whole."""
    if pattern == "*":
        return True
    p, a = pattern.split(":", 5), arn.split(":", 5)
    if len(p) != 6 or len(a) != 6:
        return fnmatch.fnmatchcase(arn, pattern)
    return all(fnmatch.fnmatchcase(x, y) for x, y in zip(a, p))


_OPERATORS = {
    "StringEquals": lambda want, have: have == want,
    "StringLike": lambda want, have: fnmatch.fnmatchcase(have, want),
    "ArnLike": lambda want, have: _arn_match(want, have),
    "ArnEquals": lambda want, have: have == want,
    "Bool": lambda want, have: str(have).lower() == str(want).lower(),
}


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    where: str = ""
    raw: str = ""

    @classmethod
    def parse(cls, raw: dict, where: str) -> "Statement":
        unsupported = set(raw) - {"Effect", "Action", "Resource", "Condition", "Sid"}
        if unsupported:
            raise NotImplementedError(f"{where}: statement elements {sorted(unsupported)}")
        conditions = {op: {k: [str(v) for v in _as_list(vals)] for k, vals in keys.items()}
                      for op, keys in raw.get("Condition", {}).items()}
        for op in conditions:
            if op not in _OPERATORS:
                raise NotImplementedError(f"{where}: condition operator {op}")
        return cls(raw["Effect"], tuple(_as_list(raw["Action"])),
                   tuple(str(r) for r in _as_list(raw["Resource"])), conditions, where,
                   json.dumps(raw, sort_keys=True))

    def matches_action(self, action: str) -> bool:
        return any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in self.actions)

    def matches_resource(self, arn: str) -> bool:
        return any(_arn_match(r, arn) for r in self.resources)

    def unmet_conditions(self, context: dict[str, Any]) -> list[str]:
        """The conditions the request context does not satisfy (keys case-insensitive;
        a key the request does not carry fails every operator used here)."""
        have = {k.lower(): _as_list(v) for k, v in context.items()}
        unmet = []
        for op, keys in self.conditions.items():
            for key, wanted in keys.items():
                values = have.get(key.lower())
                if not values or not all(any(_OPERATORS[op](w, str(v)) for w in wanted)
                                         for v in values):
                    unmet.append(f"{op} {key} in {wanted} (request: {values or 'absent'})")
        return unmet


@dataclass(frozen=True)
class Decision:
    allowed: bool
    statement: Statement | None  # the Allow (or Deny) that decided
    near: list[tuple[Statement, str]]  # Allows that matched the action but not the rest


def evaluate(statements: list[Statement], action: str, resource: str,
             context: dict[str, Any] | None = None) -> Decision:
    context = context or {}
    near: list[tuple[Statement, str]] = []
    allow = None
    for s in statements:
        if not s.matches_action(action):
            continue
        if not s.matches_resource(resource):
            near.append((s, f"resource {resource} not in {list(s.resources)}"))
            continue
        unmet = s.unmet_conditions(context)
        if unmet:
            near.append((s, "; ".join(unmet)))
            continue
        if s.effect == "Deny":
            return Decision(False, s, near)
        allow = allow or s
    return Decision(allow is not None, allow, near)


def load(assembly) -> Templates:
    """Templates of a synthesized CloudAssembly, with the stacks' regions."""
    templates = {s.stack_name: s.template for s in assembly.stacks}
    regions = {s.stack_name: s.environment.region for s in assembly.stacks}
    return Templates(templates, regions)
