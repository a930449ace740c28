"""The `ray` executor's options (`--ray-*` on the command line), and the actor and task sizes they
give on a cluster (no Ray needed: ray is imported only in engine.executors.ray)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from engine.params import Params, require


@dataclasses.dataclass(frozen=True)
class RayOptions(Params):
    """Resources and limits of the Ray executor.

    gpu_resource: the resource a model actor asks for ('GPU', or a custom resource name);
    when the cluster has none of it, model actors run on CPUs. actors_per_model: size of each
    model's pool (None: as many as the cluster has units of gpu_resource / gpus_per_actor, at
    least 1). max_retries, retry_exceptions: the executors' `RetryPolicy` (engine.executors.base)
    with max_attempts = max_retries + 1: resubmissions of a part lost to a dead worker or node,
    or whose code raised a TransientError (any exception with retry_exceptions).
    num_cpus / object_store_memory / include_dashboard only apply to a local `ray.init()`.
    """

    num_cpus_per_task: float = 1.0
    num_cpus_per_actor: float = 1.0
    gpu_resource: str = "GPU"
    gpus_per_actor: float = 1.0
    actors_per_model: int | None = None
    max_in_flight_per_actor: int = 2
    max_tasks_in_flight: int | None = None  # None: twice the cluster's CPU slots for tasks
    max_retries: int = 2
    retry_exceptions: bool = False
    num_cpus: int | None = None
    object_store_memory: int | None = None
    include_dashboard: bool = False

    def __post_init__(self) -> None:
        require(self.num_cpus_per_task > 0, "num_cpus_per_task", self.num_cpus_per_task, "a number > 0")
        require(self.num_cpus_per_actor >= 0, "num_cpus_per_actor", self.num_cpus_per_actor, "a number >= 0")
        require(bool(self.gpu_resource), "gpu_resource", self.gpu_resource, "'GPU' or a custom resource name")
        require(self.gpus_per_actor > 0, "gpus_per_actor", self.gpus_per_actor, "a number > 0 (0.5: two actors per GPU)")
        require(self.actors_per_model is None or self.actors_per_model >= 1, "actors_per_model", self.actors_per_model,
                "null (one per GPU) or an integer >= 1")
        require(self.max_in_flight_per_actor >= 1, "max_in_flight_per_actor", self.max_in_flight_per_actor, "an integer >= 1")
        require(self.max_tasks_in_flight is None or self.max_tasks_in_flight >= 1, "max_tasks_in_flight",
                self.max_tasks_in_flight, "null or an integer >= 1")
        require(self.max_retries >= 0, "max_retries", self.max_retries, "an integer >= 0")
        require(self.num_cpus is None or self.num_cpus >= 1, "num_cpus", self.num_cpus, "null or an integer >= 1")

    def actor_request(self, units: float) -> tuple[dict[str, Any], int]:
        """Ray options of a model actor and the pool size, on a cluster with `units` of gpu_resource
        (none: the actors run on CPUs)."""
        options: dict[str, Any] = {"num_cpus": self.num_cpus_per_actor}
        if units > 0:
            if self.gpu_resource == "GPU":
                options["num_gpus"] = self.gpus_per_actor
            else:
                options["resources"] = {self.gpu_resource: self.gpus_per_actor}
            size = self.actors_per_model or max(1, math.floor(units / self.gpus_per_actor + 1e-9))
        else:
            size = self.actors_per_model or 1
        return options, size

    def task_limit(self, cpus: float) -> int:
        """Model-free tasks in flight at once on a cluster of `cpus` CPUs."""
        if self.max_tasks_in_flight:
            return self.max_tasks_in_flight
        return max(1, 2 * int(cpus / self.num_cpus_per_task))
