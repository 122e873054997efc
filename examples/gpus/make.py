"""Writes the two 40-job traces of docs/gpus.md in their sources' own formats
(seed 43): tiresias-40.csv in the Tiresias simulator's schema
(SymbioticLab/Tiresias, simulator/*.csv) and openb-40.csv in Alibaba's GPU
sharing trace schema (alibaba/clusterdata, cluster-trace-gpu-v2023). They are
made-up rows in those schemas, not rows of the traces; `salus trace import`
turns each into a trace of this project (the *-trace.csv beside them)."""
import random

rng = random.Random(43)
models = ["resnet50", "vgg16", "vgg19", "inception3", "alexnet", "googlenet", "resnet101", "resnet152", "overfeat"]
with open("tiresias-40.csv", "w") as f:
    f.write("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n")
    t = 0
    for i in range(40):
        t += int(rng.expovariate(1 / 75))
        gpus = 2 if rng.random() < 0.1 else 1
        dur = int(min(max(rng.lognormvariate(6.0, 0.8), 120), 3600))
        f.write(f"{i},{gpus},{t},{dur * 10},{rng.choice(models)},{dur},{rng.choice([10, 20, 30])}\n")

with open("openb-40.csv", "w") as f:
    f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
    t = 0
    for i in range(40):
        t += int(rng.expovariate(1 / 150))
        milli = rng.choice([1000, 1000, 1000, 500, 500, 250])
        qos = rng.choice(["BE", "BE", "Burstable", "Burstable", "Guaranteed", "LS"])
        dur = int(min(max(rng.lognormvariate(6.6, 0.9), 180), 7200))
        sched = t + rng.randint(0, 5)
        f.write(f"openb-pod-{i:04d},{rng.choice([4000, 8000, 16000])},{rng.choice([16384, 32768])},1,{milli},,{qos},Succeeded,{t},{sched + dur},{sched}\n")
