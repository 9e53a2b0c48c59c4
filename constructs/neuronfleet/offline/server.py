"""moto_server: an embedded moto server on localhost for the real CDK CLI, with the kit's stand-ins on the server side.

    from neuronfleet.offline import moto_server

    with moto_server(account="111111111111", region="us-east-2") as server:
        subprocess.run(["cdk", "bootstrap"], env=server.cli_env(), check=True)
        subprocess.run(["cdk", "deploy", "--all", "--require-approval", "never"], env=server.cli_env(), check=True)
        result = server.deployed()          # a DeployResult, as deploy_assembly returns it

The server is moto's ``ThreadedMotoServer`` in this process, on ``localhost`` and a free port. Every template that
reaches CloudFormation (CreateChangeSet, CreateStack, UpdateStack) goes through the same ``prepare_template`` as the
in-process deploy, so each stand-in is made and reported with the same text (``result.stand_ins``). What the real
``cdk bootstrap`` creates (version parameter, asset bucket) is not stood in here. On top of that, the gaps only the
CLI meets (docs/DESIGN.md, "moto, as it is"), each reported when it is used (``SERVER_GAPS``):

- stacks created through a change set get outputs, exports and ``Fn::ImportValue`` as CloudFormation gives them;
- a change set whose execution fails answers 200 and the stack fails as CloudFormation's does (a ``*_FAILED``
  event and the stack's status reason name the resource and moto's error; a failed create rolls back), where moto
  answers HTTP 500, which the SDK retries into a false success;
- change sets are found by name within their stack, and deleting one that is gone succeeds while the stack exists
  (moto fails it, which blocks the CLI's second deploy);
- a stack is deleted dependents first (moto deletes in template order and, on a dependency error, leaves the rest);
- the template's own text is what GetTemplate returns, so ``cdk diff`` compares with what was deployed.
Only ``localhost`` in a TemplateURL is read from moto's own S3, hence the endpoint ``http://localhost:PORT``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from neuronfleet.offline.deploy import DeployResult, StackResult, _captured
from neuronfleet.offline.moto_patches import (
    DEFAULT_REGION,
    moto_default_account,
    sagemaker_instance_types_from_botocore,
    sagemaker_names_from_template,
)
from neuronfleet.offline.standins import Prepared, prepare_template, sagemaker_types_note

SERVER_GAPS = {
    "outputs": "moto (server): a stack created through a change set gets no outputs or exports and cannot "
               "Fn::ImportValue; given them from its template after ExecuteChangeSet, as CloudFormation does",
    "failed": "moto (server): a failed ExecuteChangeSet answers HTTP 500, which the SDK retries into a false success; "
              "answered 200 and the stack failed with the resource and moto's error, as CloudFormation does",
    "change_set": "moto (server): change sets are looked up by name across stacks and deleting a missing one fails "
                  "(the CLI's second deploy hangs on it); looked up within their stack, a missing one deletes as "
                  "CloudFormation's does while the stack exists",
    "delete": "moto: DeleteStack passes over route tables, NAT gateways (and their interfaces), EIPs, internet "
              "gateways and their attachments, flow logs, VPC endpoints and Batch queues, compute environments and job "
              "definitions and KMS keys, so the VPC keeps dependencies and is left; deleted through moto's EC2 and Batch "
              "backends, dependents first, as CloudFormation does",
    "no_update": "moto: {type} has no update in moto's CloudFormation; a changed one keeps its old properties "
                 "although the stack says UPDATE_COMPLETE (template tests and `cdk diff` show the change)",
    "layers": "moto: AWS::Lambda::Function is created without its Layers (moto's CloudFormation ignores them), but an "
              "update refuses layers moto does not hold (AWS's public Powertools layer); updated without them too",
    "deleted_outputs": "moto: a deleted stack's outputs are evaluated again when it is described, which creates the "
                       "exported resources (VPC, subnets, topic) anew; a deleted stack has no outputs here",
    "previous_value": "moto (server): UsePreviousValue gives an SSM-typed parameter's resolved value (the CLI's "
                      "BootstrapVersion), which moto then looks up as a parameter name; given the previous input "
                      "value, as CloudFormation does",
}
"""The gaps only the CLI meets, reported (with the shared stand-ins) when used. Only ``localhost`` in a TemplateURL is
read from moto's own S3: the server's endpoint is ``http://localhost:PORT``, so no stand-in is needed for it."""

_ROLLBACK_REASON = "moto cannot roll an update back: the stack holds what was updated before the failure"


@dataclass
class MotoServer:
    """A running embedded moto server: where it listens, what it stood in for, and what the CLI deployed into it."""

    url: str
    account: str
    region: str
    result: DeployResult = field(default_factory=DeployResult)
    """Stand-ins (``result.stand_ins``) and moto's warnings while the server ran; ``deployed()`` adds the stacks."""
    prepared: dict[tuple[str, str], Prepared] = field(default_factory=dict)
    """(region, stack name) -> what the last template of that stack had skipped and replaced."""
    _home: str = ""
    _clients: dict[tuple[str, str], Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def access_key(self) -> str:
        """Fake, and one per server: moto remembers the keys of roles assumed through an earlier server's STS."""
        return f"AKIANF{self.account}{self.url.rsplit(':', 1)[1]}"

    def _credentials(self) -> dict[str, str]:
        return {"aws_access_key_id": self.access_key, "aws_secret_access_key": "testing"}

    def cli_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for the CDK CLI (or any AWS SDK): this server, fake credentials, no profile or config
        file that could reach a real account, the fleet's region."""
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if not k.startswith("AWS_") and k not in ("CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION")}
        env.update({"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": "testing"})
        env.update({"AWS_ENDPOINT_URL": self.url, "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region,
                    "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_CONFIG_FILE": os.path.join(self._home, "config"),
                    "AWS_SHARED_CREDENTIALS_FILE": os.path.join(self._home, "credentials"),
                    "CDK_DISABLE_CLI_TELEMETRY": "true"})
        return env

    def client(self, service: str, region: str | None = None) -> Any:
        """A boto3 client of this server (cached per service and region)."""
        import boto3

        key = (service, region or self.region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = boto3.client(
                    service, region_name=key[1], endpoint_url=self.url, **self._credentials())
            return self._clients[key]

    def resource(self, service: str, region: str | None = None) -> Any:
        """A boto3 resource of this server (DynamoDB tables, for instance)."""
        import boto3

        return boto3.resource(service, region_name=region or self.region, endpoint_url=self.url,
                              **self._credentials())

    def deployed(self, regions: list[str] | None = None) -> DeployResult:
        """Every stack in the server (the fleet's region and any other a stack went to), as deploy_assembly
        reports them: status, reason, resources moto keeps, skipped types, placeholders, outputs; with the
        stand-ins and warnings so far. CDK's bootstrap stack (CDKToolkit) is left out."""
        result = DeployResult(stand_ins=list(self.result.stand_ins), warnings=list(self.result.warnings))
        for region in regions or sorted({self.region} | {r for r, _ in self.prepared}):
            cfn = self.client("cloudformation", region)
            stacks = [s for page in cfn.get_paginator("describe_stacks").paginate() for s in page["Stacks"]]
            for desc in sorted(stacks, key=lambda s: s["CreationTime"]):
                if desc["StackName"] == "CDKToolkit":
                    continue
                counts: dict[str, int] = {}
                for page in cfn.get_paginator("list_stack_resources").paginate(StackName=desc["StackName"]):
                    for r in page["StackResourceSummaries"]:
                        if r["ResourceType"]:  # moto lists each skipped resource as a blank entry
                            counts[r["ResourceType"]] = counts.get(r["ResourceType"], 0) + 1
                prepared = self.prepared.get((region, desc["StackName"]), Prepared())
                result.stacks.append(StackResult(
                    name=desc["StackName"], status=desc["StackStatus"], reason=desc.get("StackStatusReason", ""),
                    account=self.account, region=region, resources=counts, skipped=prepared.skipped,
                    placeholders=prepared.placeholders,
                    outputs={o["OutputKey"]: o["OutputValue"] for o in desc.get("Outputs", [])}))
        return result


    def inventory(self, region: str | None = None) -> set[str]:
        """What exists in ``region`` (default: the server's), as ``service:kind:id`` strings, for the services the
        kit deploys to: compare before a deploy and after ``cdk destroy`` to see what was left behind. Deleted
        NAT gateways and VPC endpoints (AWS lists them a while), keys pending deletion, default VPC resources and
        AWS's service-linked roles are not counted."""
        def c(service: str) -> Any:
            return self.client(service, region)

        ec2 = c("ec2")
        found = {f"ec2:vpc:{v['VpcId']}" for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]}
        found |= {f"ec2:subnet:{x['SubnetId']}" for x in ec2.describe_subnets()["Subnets"] if not x["DefaultForAz"]}
        found |= {f"ec2:security-group:{g['GroupId']}" for g in ec2.describe_security_groups()["SecurityGroups"]
                  if g["GroupName"] != "default"}
        found |= {f"ec2:route-table:{t['RouteTableId']}" for t in ec2.describe_route_tables()["RouteTables"]
                  if not any(a.get("Main") for a in t["Associations"])}
        found |= {f"ec2:internet-gateway:{g['InternetGatewayId']}" for g in
                  ec2.describe_internet_gateways()["InternetGateways"]}
        found |= {f"ec2:nat-gateway:{n['NatGatewayId']}" for n in ec2.describe_nat_gateways()["NatGateways"]
                  if n["State"] != "deleted"}
        found |= {f"ec2:vpc-endpoint:{e['VpcEndpointId']}" for e in ec2.describe_vpc_endpoints()["VpcEndpoints"]
                  if e["State"] != "deleted"}
        found |= {f"ec2:address:{a['AllocationId']}" for a in ec2.describe_addresses()["Addresses"]}
        found |= {f"ec2:network-interface:{n['NetworkInterfaceId']}" for n in
                  ec2.describe_network_interfaces()["NetworkInterfaces"]}
        found |= {f"ec2:flow-log:{f['FlowLogId']}" for f in ec2.describe_flow_logs()["FlowLogs"]}
        found |= {f"ec2:launch-template:{t['LaunchTemplateName']}" for t in
                  ec2.describe_launch_templates()["LaunchTemplates"]}
        found |= {f"lambda:function:{f['FunctionName']}" for f in c("lambda").list_functions()["Functions"]}
        found |= {f"dynamodb:table:{t}" for t in c("dynamodb").list_tables()["TableNames"]}
        found |= {f"s3:bucket:{b['Name']}" for b in c("s3").list_buckets()["Buckets"]}
        found |= {f"sns:topic:{t['TopicArn']}" for t in c("sns").list_topics()["Topics"]}
        found |= {f"sqs:queue:{q}" for q in c("sqs").list_queues().get("QueueUrls", [])}
        found |= {f"iam:role:{r['RoleName']}" for r in c("iam").list_roles()["Roles"]
                  if not r["Path"].startswith("/aws-service-role/")}
        found |= {f"iam:policy:{p['PolicyName']}" for p in c("iam").list_policies(Scope="Local")["Policies"]}
        found |= {f"logs:log-group:{g['logGroupName']}" for g in c("logs").describe_log_groups()["logGroups"]}
        found |= {f"events:rule:{r['Name']}" for r in c("events").list_rules()["Rules"]}
        batch = c("batch")
        found |= {f"batch:compute-environment:{e['computeEnvironmentName']}" for e in
                  batch.describe_compute_environments()["computeEnvironments"]}
        found |= {f"batch:job-queue:{q['jobQueueName']}" for q in batch.describe_job_queues()["jobQueues"]}
        found |= {f"batch:job-definition:{d['jobDefinitionName']}" for d in
                  batch.describe_job_definitions(status="ACTIVE")["jobDefinitions"]}
        sm = c("sagemaker")
        found |= {f"sagemaker:endpoint:{e['EndpointName']}" for e in sm.list_endpoints()["Endpoints"]}
        found |= {f"sagemaker:endpoint-config:{e['EndpointConfigName']}" for e in
                  sm.list_endpoint_configs()["EndpointConfigs"]}
        found |= {f"sagemaker:model:{m['ModelName']}" for m in sm.list_models()["Models"]}
        kms = c("kms")
        aws_managed = {a["TargetKeyId"] for a in kms.list_aliases()["Aliases"]  # AWS creates these on first use
                       if a["AliasName"].startswith("alias/aws/") and "TargetKeyId" in a}  # (aws/dynamodb, ...)
        found |= {f"kms:key:{k['KeyId']}" for k in kms.list_keys()["Keys"] if k["KeyId"] not in aws_managed
                  and _key_state(self.account, region or self.region, k["KeyId"]) != "PendingDeletion"}
        found |= {f"ssm:parameter:{p['Name']}" for p in c("ssm").describe_parameters()["Parameters"]}
        found |= {f"cloudwatch:dashboard:{d['DashboardName']}"
                  for d in c("cloudwatch").list_dashboards()["DashboardEntries"]}
        return found


def _key_state(account: str, region: str, key_id: str) -> str:
    # read from moto's backend: its DescribeKey fails (HTTP 500) on a key whose policy came from a template as a
    # document rather than a string
    from moto.kms.models import kms_backends

    return str(kms_backends[account][region].keys[key_id].key_state)




def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_server(*, account: str | None = None, region: str | None = None, port: int = 0) -> Iterator[MotoServer]:
    """moto's ThreadedMotoServer on localhost (a free port unless ``port``), serving ``account`` (MOTO_ACCOUNT_ID,
    default moto's) with ``region`` as the default, the kit's stand-ins applied to every template it receives.

    MOTO_ACCOUNT_ID is set in this process while the server runs (moto reads it per request) and restored after;
    moto's state is reset on exit. One at a time per process."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    account = account or moto_default_account()
    region = region or DEFAULT_REGION
    saved = os.environ.get("MOTO_ACCOUNT_ID")
    os.environ["MOTO_ACCOUNT_ID"] = account
    with tempfile.TemporaryDirectory(prefix="neuronfleet-moto-") as home, ExitStack() as stack:
        port = port or _free_port()
        # moto recognises only `localhost` in a TemplateURL as its own S3; listen on the address localhost names
        server = MotoServer(url=f"http://localhost:{port}", account=account, region=region, _home=home)
        extended: list[str] = []
        try:
            stack.enter_context(_captured(server.result))
            stack.enter_context(_quiet_werkzeug())
            stack.enter_context(sagemaker_names_from_template())

            def on_extended(instance_type: str) -> None:
                # noted when moto meets the type (while a change set executes), not only when the next template is
                # prepared: the last stack the CLI deploys may be the one with the endpoint
                extended.append(instance_type)
                _note_types(server, extended)

            stack.enter_context(sagemaker_instance_types_from_botocore(on_extended=on_extended))
            stack.enter_context(_server_side_stand_ins(server, lambda: _note_types(server, extended)))
            moto = ThreadedMotoServer(ip_address="localhost", port=port, verbose=False)
            moto.start()
            stack.callback(moto.stop)
            stack.callback(_reset_moto, server.url)
            yield server
        finally:
            stack.close()
            if saved is None:
                os.environ.pop("MOTO_ACCOUNT_ID", None)
            else:
                os.environ["MOTO_ACCOUNT_ID"] = saved


def _note_types(server: MotoServer, extended: list[str]) -> None:
    if extended:
        text = sagemaker_types_note(extended)
        # one entry for the types seen so far (a later stack may add types: the entry is replaced, not repeated)
        server.result.stand_ins[:] = [s for s in server.result.stand_ins
                                      if not s.startswith(text.split(" rejects ")[0])]
        server.result.stand_in(text)


def _reset_moto(url: str) -> None:
    """Drop moto's state (its own reset endpoint), so that the next server starts empty."""
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=30).close()


@contextmanager
def _quiet_werkzeug() -> Iterator[None]:
    """werkzeug logs each request at INFO; keep the terminal for the CLI's own output."""
    logger = logging.getLogger("werkzeug")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class _Patch:
    """Class attributes replaced for the server's lifetime and restored afterwards."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        self.saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    def restore(self) -> None:
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)


@contextmanager
def _server_side_stand_ins(server: MotoServer, note_types: Callable[[], None]) -> Iterator[None]:
    from moto.cloudformation import models, parsing, responses

    patch = _Patch()
    note = server.result.stand_in
    _templates_as_sent(patch, server, note_types, models.CloudFormationBackend, responses.CloudFormationResponse)
    _change_sets_in_their_stack(patch, note, responses.CloudFormationResponse)
    _failures_and_updates(patch, note, parsing)
    _deletion(patch, note, models, parsing)
    try:
        yield
    finally:
        patch.restore()


def _templates_as_sent(patch: _Patch, server: MotoServer, note_types: Callable[[], None], backend_cls: Any,
                       response_cls: Any) -> None:
    """Templates prepared as in process; GetTemplate answers the template as sent; UsePreviousValue kept."""
    note = server.result.stand_in

    def prepare(backend: Any, stack_name: str, template: str) -> str:
        try:
            body = json.loads(template)
        except (TypeError, ValueError):
            return template  # not JSON (CDK writes JSON): given to moto as it is
        if not isinstance(body, dict) or "Resources" not in body:
            return template
        region = backend.region_name
        server.prepared[(region, stack_name)] = prepare_template(
            body, region=region, note=note, client=lambda service, r: server.client(service, r))
        note_types()
        return json.dumps(body)

    own_create_change_set = backend_cls.__dict__["create_change_set"]

    previous = threading.local()  # the parameters a CreateChangeSet request asks to keep (UsePreviousValue)
    own_response_create_change_set = response_cls.__dict__["create_change_set"]

    def response_create_change_set(self: Any) -> Any:
        previous.keys = {p["ParameterKey"] for p in self._get_param("Parameters", []) if p.get("UsePreviousValue")}
        try:
            return own_response_create_change_set(self)
        finally:
            previous.keys = set()

    patch.set(response_cls, "create_change_set", response_create_change_set)

    def create_change_set(self: Any, stack_name: str, change_set_name: str, template: str, *args: Any,
                          **kwargs: Any) -> tuple[str, str]:
        if kwargs.get("change_set_type") == "UPDATE" and getattr(previous, "keys", None):
            stack = self.get_stack(stack_name)
            declared = stack.template_dict.get("Parameters", {})
            for key in previous.keys:
                given = stack.parameters.get(key, declared.get(key, {}).get("Default"))
                if given is not None and kwargs["parameters"].get(key) != given:
                    kwargs["parameters"][key] = given
                    note(SERVER_GAPS["previous_value"])
        prepared = prepare(self, stack_name, template)
        _forget_change_set(self, change_set_name, stack_name)
        change_set_id, stack_id = own_create_change_set(self, stack_name, change_set_name, prepared, *args, **kwargs)
        self.change_sets[change_set_id].sent_template = template
        return change_set_id, stack_id

    patch.set(backend_cls, "create_change_set", create_change_set)

    def sending(own: Callable[..., Any]) -> Callable[..., Any]:
        """CreateStack and UpdateStack: the template prepared for moto, its text kept for GetTemplate."""

        def call(self: Any, name: str, template: str, *args: Any, **kwargs: Any) -> Any:
            stack = own(self, name, prepare(self, name, template), *args, **kwargs)
            stack.sent_template = template
            return stack

        return call

    for method in ("create_stack", "update_stack"):
        patch.set(backend_cls, method, sending(backend_cls.__dict__[method]))

    own_get_template = backend_cls.__dict__["get_template"]

    def get_template(self: Any, name_or_stack_id: str) -> Any:
        stack = self.get_stack(name_or_stack_id)
        return getattr(stack, "sent_template", None) or own_get_template(self, name_or_stack_id)

    patch.set(backend_cls, "get_template", get_template)


def _change_sets_in_their_stack(patch: _Patch, note: Callable[[str], None], response_cls: Any) -> None:
    """Change sets: found within their stack; a missing one deletes while the stack exists."""

    def find(backend: Any, name: str, stack_name: str | None) -> Any:
        if name in backend.change_sets:
            return backend.change_sets[name]
        for cs in reversed(list(backend.change_sets.values())):
            if cs.change_set_name == name and (not stack_name or stack_name in (cs.stack_name, cs.stack_id)):
                return cs
        return None

    def describe_change_set(self: Any) -> Any:
        from moto.core.responses import ActionResult

        cs = find(self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
        if cs is None:
            raise _change_set_not_found(self._get_param("ChangeSetName"))
        return ActionResult(cs)

    def delete_change_set(self: Any) -> Any:
        from moto.core.responses import EmptyResult

        backend = self.cloudformation_backend
        name, stack_name = self._get_param("ChangeSetName"), self._get_param("StackName")
        cs = find(backend, name, stack_name)
        if cs is not None:
            del backend.change_sets[cs.change_set_id]
        elif stack_name:
            backend.get_stack(stack_name)  # ValidationError when the stack does not exist either
            note(SERVER_GAPS["change_set"])
        else:
            raise _change_set_not_found(name)
        return EmptyResult()

    def execute_change_set(self: Any) -> Any:
        from moto.core.responses import EmptyResult

        backend = self.cloudformation_backend
        cs = find(backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
        if cs is None:
            raise _change_set_not_found(self._get_param("ChangeSetName"))
        _execute(backend, cs, note)
        return EmptyResult()

    patch.set(response_cls, "describe_change_set", describe_change_set)
    patch.set(response_cls, "delete_change_set", delete_change_set)
    patch.set(response_cls, "execute_change_set", execute_change_set)


def _failures_and_updates(patch: _Patch, note: Callable[[str], None], parsing: Any) -> None:
    """Failures: remember which resource moto failed on; updates moto cannot make: reported, never passed off as
    made."""
    own_parse_and_create = parsing.__dict__["parse_and_create_resource"]

    def parse_and_create_resource(logical_id: str, resource_json: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return own_parse_and_create(logical_id, resource_json, *args, **kwargs)
        except Exception as exc:
            if not hasattr(exc, "neuronfleet_resource"):
                exc.neuronfleet_resource = (logical_id, resource_json.get("Type", ""))  # type: ignore[attr-defined]
            raise

    patch.set(parsing, "parse_and_create_resource", parse_and_create_resource)

    # --- updates moto cannot make: reported, never passed off as made ------------------------------------------
    own_parse_and_update = parsing.__dict__["parse_and_update_resource"]

    def parse_and_update_resource(logical_id: str, resource_json: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        kind = resource_json.get("Type", "")
        model = parsing.get_model_map().get(kind)
        if model is not None and hasattr(model.update_from_cloudformation_json, "__isabstractmethod__"):
            note(SERVER_GAPS["no_update"].format(type=kind))
        if kind == "AWS::Lambda::Function" and resource_json.get("Properties", {}).get("Layers"):
            # created without them (moto's CloudFormation ignores Layers); updated the same way
            resource_json = {**resource_json, "Properties": {
                k: v for k, v in resource_json["Properties"].items() if k != "Layers"}}
            note(SERVER_GAPS["layers"])
        try:
            return own_parse_and_update(logical_id, resource_json, *args, **kwargs)
        except Exception as exc:
            if not hasattr(exc, "neuronfleet_resource"):
                exc.neuronfleet_resource = (logical_id, kind)  # type: ignore[attr-defined]
            raise

    patch.set(parsing, "parse_and_update_resource", parse_and_update_resource)


def _deletion(patch: _Patch, note: Callable[[str], None], models: Any, parsing: Any) -> None:
    """A deleted stack keeps its outputs' values, never re-evaluates them; deletion: dependents first."""
    own_stack_delete = models.Stack.__dict__["delete"]

    def stack_delete(self: Any) -> None:
        # moto evaluates outputs lazily: DescribeStacks on the deleted stack (the CLI's last poll) would create the
        # exported VPC, subnets and topic again from the template
        own_stack_delete(self)
        self.output_map = models.OutputMap(self.resource_map, {"Outputs": {}}, self.stack_id)
        note(SERVER_GAPS["deleted_outputs"])

    patch.set(models.Stack, "delete", stack_delete)

    # --- deletion: dependents first ------------------------------------------------------------------------
    own_delete = parsing.ResourceMap.__dict__["delete"]

    def delete(self: Any) -> None:
        _delete_dependents_first(self, own_delete, note)

    patch.set(parsing.ResourceMap, "delete", delete)


def _forget_change_set(backend: Any, name: str, stack_name: str) -> None:
    """A change set name is unique within its stack: a new one replaces an executed one of the same stack."""
    for cs_id, cs in list(backend.change_sets.items()):
        if cs.change_set_name == name and cs.stack_name == stack_name and cs.execution_status == "EXECUTE_COMPLETE":
            del backend.change_sets[cs_id]


def _change_set_not_found(name: str) -> Exception:
    from moto.cloudformation.exceptions import CloudFormationError

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFound"

    return ChangeSetNotFound(f"ChangeSet [{name}] does not exist")


def _event(stack: Any, logical: str, physical: str, kind: str, status: str, reason: str | None) -> None:
    from moto.cloudformation.models import Event

    stack.events.append(Event(stack_id=stack.stack_id, stack_name=stack.name, logical_resource_id=logical,
                              physical_resource_id=physical, resource_type=kind, resource_status=status,
                              resource_status_reason=reason, resource_properties=None))


def _execute(backend: Any, cs: Any, note: Callable[[str], None]) -> None:
    """ExecuteChangeSet as CloudFormation answers it: outputs and exports from the template, imports resolved,
    and a failure recorded on the stack (never an HTTP 500)."""
    stack = backend.stacks[cs.stack_id]
    creating = cs.change_set_type == "CREATE"
    stack.cross_stack_resources = backend.exports
    stack.resource_map.cross_stack_resources = backend.exports
    old_exports = [e.name for e in stack.exports] if not creating else []
    try:
        backend.execute_change_set(cs.change_set_id, stack.name)
        stack._parse_template()
        stack.output_map = stack._create_output_map()
        new_exports = stack.exports
        clash = {e.name for e in new_exports} & (set(backend.exports) - set(old_exports))
        if clash:
            raise ValueError(f"Export names must be unique across a given region: {', '.join(sorted(clash))}")
    except Exception as exc:
        _fail(stack, cs, exc, creating)
        note(SERVER_GAPS["failed"])
        return
    if hasattr(cs, "sent_template"):
        stack.sent_template = cs.sent_template
    for name in old_exports:
        backend.exports.pop(name, None)
    for export in new_exports:
        backend.exports[export.name] = export
    if creating and (stack.outputs or new_exports):
        note(SERVER_GAPS["outputs"])


def _fail(stack: Any, cs: Any, exc: Exception, creating: bool) -> None:
    logical, kind = getattr(exc, "neuronfleet_resource", (stack.name, "AWS::CloudFormation::Stack"))
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    reason = f"{logical} ({kind}): {type(exc).__name__}: {message}"
    action = "CREATE" if creating else "UPDATE"
    if logical != stack.name:
        _event(stack, logical, "", kind, f"{action}_FAILED", f"{type(exc).__name__}: {message}")
    cs.execution_status, cs.status_reason = "EXECUTE_FAILED", reason
    if creating:
        stack._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=f"The following resource(s) failed to "
                               f"create: [{logical}]. Rollback requested by user.")
        try:
            stack.resource_map.delete()
            status = "ROLLBACK_COMPLETE"
        except Exception as rollback:  # what moto could not delete stays, and the stack says so
            status = "ROLLBACK_FAILED"
            reason += f"; rollback: {type(rollback).__name__}: {rollback}"
    else:
        status = "UPDATE_ROLLBACK_FAILED"
        reason += f"; {_ROLLBACK_REASON}"
    stack._add_stack_event(status, resource_status_reason=reason)
    stack.status, stack.status_reason = status, reason


def _deleters() -> dict[str, Callable[[Any, Any], None]]:
    """What moto's CloudFormation does not delete (its models have no delete, so DeleteStack passes over them and
    the VPC is left with dependencies): deleted through moto's EC2 backend, as CloudFormation deletes them."""

    def nat_gateway(b: Any, nat: Any) -> None:
        b.ec2.delete_nat_gateway(nat.id)  # AWS keeps a deleted NAT gateway visible, in state "deleted"
        eni = getattr(nat, "_eni", None)
        if eni is not None and eni.id in b.ec2.enis:  # ...and releases its network interface
            b.ec2.enis.pop(eni.id)

    def attachment(b: Any, att: Any) -> None:
        if str(att.gateway_id).startswith("igw-"):
            b.ec2.detach_internet_gateway(att.gateway_id, att.vpc_id)
        else:
            b.ec2.detach_vpn_gateway(att.gateway_id, att.vpc_id)

    return {
        "AWS::EC2::VPCGatewayAttachment": attachment,
        "AWS::EC2::NatGateway": nat_gateway,
        "AWS::EC2::EIP": lambda b, eip: b.ec2.release_address(allocation_id=eip.allocation_id),
        "AWS::EC2::InternetGateway": lambda b, igw: b.ec2.delete_internet_gateway(igw.id),
        "AWS::EC2::RouteTable": lambda b, table: b.ec2.delete_route_table(table.id),
        "AWS::EC2::FlowLog": lambda b, log: b.ec2.delete_flow_logs([log.id]),
        "AWS::EC2::VPCEndpoint": lambda b, endpoint: b.ec2.delete_vpc_endpoints([endpoint.id]),
        "AWS::Batch::JobQueue": lambda b, queue: b.batch.delete_job_queue(queue.arn),
        "AWS::Batch::ComputeEnvironment": lambda b, env: b.batch.delete_compute_environment(env.arn),
        "AWS::Batch::JobDefinition": lambda b, definition: b.batch.deregister_job_definition(definition.arn),
        "AWS::KMS::Key": lambda b, key: b.kms.schedule_key_deletion(key.id, 7),  # as CloudFormation does
    }


class _Backends:
    """moto's EC2 and Batch backends of one account and region."""

    def __init__(self, account: str, region: str) -> None:
        from moto.batch.models import batch_backends
        from moto.ec2.models import ec2_backends
        from moto.kms.models import kms_backends

        self.ec2, self.batch = ec2_backends[account][region], batch_backends[account][region]
        self.kms = kms_backends[account][region]


def _delete_dependents_first(resource_map: Any, own_delete: Callable[[Any], None], note: Callable[[str], None]) -> None:
    """Delete what depends on a resource before the resource (reverse creation order), the EC2 resources moto's
    CloudFormation passes over through its EC2 backend, then let moto's own loop retry what is left; anything that
    still cannot be deleted fails the deletion with moto's error."""
    backends = _Backends(resource_map._account_id, resource_map._region_name)
    deleters = _deleters()
    json_map = resource_map._resource_json_map
    retained = {k for k, v in json_map.items() if v.get("DeletionPolicy") == "Retain"}
    for logical in reversed(list(resource_map._parsed_resources)):
        parsed = resource_map._parsed_resources.get(logical)
        if logical in retained or parsed is None or isinstance(parsed, str) or logical not in json_map:
            continue
        kind = json_map[logical].get("Type", "")
        try:
            if kind in deleters:
                deleters[kind](backends, parsed)
                note(SERVER_GAPS["delete"])
            else:
                resource_map._delete_resource(parsed, json_map[logical])
        except Exception:
            continue  # moto's loop below tries again and reports what is left
        resource_map._parsed_resources.pop(logical, None)
    own_delete(resource_map)
