"""Realistic trace fixtures written by the tests: jobs drawn from the fitted stream, started
after a queue wait, written in each scheduler's own accounting format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from twin.workload.stream import default_stream_params, generate_jobs

EPOCH = pd.Timestamp("2023-03-01T00:00:00", tz="Asia/Shanghai")


def sample_jobs(n_days: float = 2.0, seed: int = 7, jobs_per_hour: float = 60.0,
                cpu_share: float = 0.1) -> pd.DataFrame:
    """A stream's jobs with recorded starts and ends (whole seconds, as accounting logs)."""
    rng = np.random.default_rng(seed)
    jobs = generate_jobs(default_stream_params(), rng, horizon_s=n_days * 86400,
                         jobs_per_hour=jobs_per_hour, diurnal_amplitude=0.3)
    submit = np.floor(jobs.submit_s.to_numpy())
    start = submit + np.floor(rng.exponential(300.0, len(jobs)))
    end = start + np.ceil(jobs.duration_s.to_numpy())
    gpus = jobs.gpus.to_numpy().copy()
    cpu = rng.uniform(size=len(jobs)) < cpu_share
    gpus[cpu] = 0
    state = jobs.state.astype(str).str.upper().to_numpy()
    return pd.DataFrame({"job_id": [f"dlc{i:07d}" for i in range(len(jobs))],
                         "user": jobs.user.to_numpy(), "project": jobs.project.to_numpy(),
                         "queue": jobs.queue.to_numpy(), "type": jobs.job_class.astype(str).to_numpy(),
                         "gpus": gpus, "nodes": np.maximum(jobs.nodes.to_numpy(), 1),
                         "state": state, "submit": submit, "start": start, "end": end})


def _ts(sec, epoch: pd.Timestamp = EPOCH) -> pd.DatetimeIndex:
    return epoch + pd.to_timedelta(np.asarray(sec), unit="s")


def write_acme(jobs: pd.DataFrame, path: Path, epoch: pd.Timestamp = EPOCH) -> Path:
    """Acme schema: job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,
    end_time,duration,queue,gpu_time (ISO 8601 with the epoch's offset, +08:00 by default)."""
    fmt = lambda s: [t.isoformat() for t in _ts(s, epoch)]  # noqa: E731
    dur = (jobs.end - jobs.start).astype(int)
    df = pd.DataFrame({"job_id": jobs.job_id, "user": jobs.user, "node_num": jobs.nodes,
                       "gpu_num": jobs.gpus, "cpu_num": jobs.gpus * 12 + 4, "type": jobs.type,
                       "state": jobs.state, "submit_time": fmt(jobs.submit),
                       "start_time": fmt(jobs.start), "end_time": fmt(jobs.end), "duration": dur,
                       "queue": (jobs.start - jobs.submit).astype(int), "gpu_time": dur * jobs.gpus})
    df.to_csv(path, index=False)
    return path


def write_sacct(jobs: pd.DataFrame, path: Path, epoch: pd.Timestamp = EPOCH) -> Path:
    """sacct --parsable2 --format=JobID,User,Account,Partition,NNodes,AllocTRES,State,Submit,
    Start,End,Elapsed with a batch and an extern step after each job (local naive times)."""
    fmt = lambda s: [t.tz_localize(None).strftime("%Y-%m-%dT%H:%M:%S") for t in _ts(s, epoch)]  # noqa: E731
    sub, st, en = fmt(jobs.submit), fmt(jobs.start), fmt(jobs.end)
    lines = ["JobID|User|Account|Partition|NNodes|AllocTRES|State|Submit|Start|End|Elapsed"]
    for i, j in enumerate(jobs.itertuples()):
        el = int(j.end - j.start)
        elapsed = f"{el // 86400}-{el % 86400 // 3600:02d}:{el % 3600 // 60:02d}:{el % 60:02d}"
        tres = f"billing={j.gpus * 12 + 4},cpu={j.gpus * 12 + 4},mem={64 * j.nodes}G,node={j.nodes}"
        if j.gpus:
            tres = tres.replace(",mem", f",gres/gpu={j.gpus},gres/gpu:h100={j.gpus},mem")
        state = "CANCELLED by 1001" if j.state == "CANCELLED" else j.state
        jid = 4000000 + i
        lines.append(f"{jid}|{j.user}|{j.project}|{j.queue}|{j.nodes}|{tres}|{state}|{sub[i]}|{st[i]}|{en[i]}|{elapsed}")
        lines.append(f"{jid}.batch|||||cpu=4,mem=64G,node=1|{j.state.split()[0]}|{sub[i]}|{st[i]}|{en[i]}|{elapsed}")
        lines.append(f"{jid}.extern|||||{tres}|COMPLETED|{sub[i]}|{st[i]}|{en[i]}|{elapsed}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_bacct(jobs: pd.DataFrame, path: Path, with_year: bool = False) -> Path:
    """bacct -l records (dates without a year, as LSF prints by default; long lines wrapped
    at 79 columns with a 21-space continuation indent)."""

    def d(sec):
        t = _ts([sec])[0].tz_localize(None)
        s = t.strftime("%a %b ") + f"{t.day:2d}" + t.strftime(" %H:%M:%S")
        return s + (t.strftime(" %Y") if with_year else "")

    def wrap(text: str) -> list[str]:
        out, first = [], True
        while text:
            width = 79 if first else 79 - 21
            out.append(("" if first else " " * 21) + text[:width])
            text, first = text[width:], False
        return out

    term = {"COMPLETED": ("DONE", "Completed <done>."),
            "FAILED": ("EXIT", "Completed <exit>; TERM_RUNLIMIT: job killed after reaching LSF run time limit."),
            "CANCELLED": ("EXIT", "Completed <exit>; TERM_OWNER: job killed by owner.")}
    lines = ["", "Accounting information about jobs that are: ", "  - submitted by all users.",
             "  - accounted on all projects.", "  - completed normally or exited",
             "  - executed on all hosts.", "  - submitted to all queues.",
             "  - accounted on all service classes.", "-" * 78]
    for i, j in enumerate(jobs.itertuples()):
        status, done = term[j.state]
        lines.append("")
        lines += wrap(f"Job <{100 + i}>, User <{j.user}>, Project <{j.project}>, Status <{status}>, "
                      f"Queue <{j.queue}>, Command <python train.py --cfg {j.type}.yaml>, Share group "
                      f"charged </{j.user}>")
        gpu = (f", Requested GPU <num={min(j.gpus, 8)}:mode=exclusive_process:mps=no:j_exclusive=yes>"
               if j.gpus else "")
        lines += wrap(f"{d(j.submit)}: Submitted from host <login1>, CWD <$HOME/{j.project}>{gpu};")
        hosts = " ".join(f"<{min(j.gpus, 8) * 12 or 4}*node{(7 * i + h) % 256:03d}>" for h in range(j.nodes))
        lines += wrap(f"{d(j.start)}: Dispatched {j.nodes} Task(s) on Host(s) {hosts}, Allocated "
                      f"{j.nodes} Slot(s) on Host(s) {hosts}, Effective RES_REQ <select[type == "
                      f"local] order[r15s:pg] >;")
        lines += wrap(f"{d(j.end)}: {done}")
        lines += ["", "Accounting information about this job:",
                  "     CPU_T     WAIT     TURNAROUND   STATUS     HOG_FACTOR    MEM    SWAP",
                  f"  {(j.end - j.start) * 4:8.2f} {int(j.start - j.submit):8d} "
                  f"{int(j.end - j.submit):14d}     {status.lower():>6s}     0.2500     2G     4G",
                  "-" * 78]
    path.write_text("\n".join(lines) + "\n")
    return path
