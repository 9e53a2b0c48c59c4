"""CapacityAlerts: failed or ending Trainium capacity, announced with what the GPU pool can take instead."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from constructs import Construct

from .alerts import grant_publish
from .fallback import GpuPool
from .functions import FleetFunction
from .lambdas.capacity_alert.settings import CapacityAlertSettings, gpu_pool


class CapacityAlerts(Construct):
    """Announces failed or ending Trainium capacity with what the GPU pool can take instead.

    Watches: Capacity Block expiration warnings and failed/expired/delayed reservations (EC2), instance
    launches refused for capacity (EC2 Auto Scaling, which AWS Batch uses), and Batch jobs on the Trainium
    queues held RUNNABLE for capacity (``statusReason`` starting ``CAPACITY:``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, pool: GpuPool, topic: sns.ITopic,
                 trainium_queues: Sequence[batch.IJobQueue] = ()) -> None:
        super().__init__(scope, construct_id)
        self.function = FleetFunction(
            self, "Function", handler="capacity_alert.handler.handler", alarm_topic=topic,
            description="neuronfleet: Trainium capacity events -> GPU fallback announcement",
            environment=CapacityAlertSettings(pool=gpu_pool(pool.describe()), topic_arn=topic.topic_arn,
                                              ).to_environment(to_json=Stack.of(self).to_json_string))
        grant_publish(topic, self.function.role)
        target = self.function.event_target()
        self.rules = [
            events.Rule(self, "ReservationEvents", description="Capacity Block ending, reservation failed/expired",
                        targets=[target], event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=[
                            "Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning",
                            "EC2 Capacity Reservation Failed", "EC2 Capacity Reservation Expired",
                            "EC2 Capacity Reservation Delayed"])),
            events.Rule(self, "LaunchUnsuccessful", description="Instances not launched for lack of capacity",
                        targets=[target], event_pattern=events.EventPattern(
                            source=["aws.autoscaling"], detail_type=["EC2 Instance Launch Unsuccessful"],
                            detail={"StatusMessage": events.Match.wildcard("*InsufficientInstanceCapacity*")})),
        ]
        if trainium_queues:
            self.rules.append(events.Rule(
                self, "JobsStuck", description="Trainium Batch jobs held RUNNABLE for capacity", targets=[target],
                event_pattern=events.EventPattern(source=["aws.batch"], detail_type=["Batch Job State Change"], detail={
                    "status": ["RUNNABLE"], "statusReason": events.Match.prefix("CAPACITY:"),
                    "jobQueue": [q.job_queue_arn for q in trainium_queues]})))
