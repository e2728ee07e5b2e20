"""The one message ``--job NAME`` gives when NAME is not a job a per-job command can model
(``twin capacity --job``, ``twin estimate step SCENARIO --job``).

A scenario's jobs are its fixed ``workload.jobs``, or for a stream or a trace the training
classes (:func:`twin.workload.engine_jobs.representative_jobs`): the classes that train no
tokens (evaluation, debug) have no training step or synchronous swing to model, so they are
not offered, and the message says so rather than claiming the name does not exist.
"""

from __future__ import annotations


def unknown_job_message(path: str, scenario, name: str) -> str | None:
    """None when ``name`` is one of the jobs of ``scenario`` that a per-job tool models,
    else one line saying where the names come from and listing the valid ones."""
    from twin.workload.engine_jobs import CLASS_MODELS, TRAINING_CLASSES, representative_jobs
    valid = [j.name for j in representative_jobs(scenario)]
    if name in valid:
        return None
    w = scenario.workload
    if w.jobs:
        return f"{path}: workload.jobs has no job {name!r} (jobs: {', '.join(valid)})"
    if w.stream is None and w.trace is None:
        return f"{path}: --job {name}: the scenario has no jobs (workload.jobs is empty and there is no stream or trace)"
    source = "workload.stream" if w.stream is not None else "workload.trace"
    text = (f"{path}: --job {name}: the jobs of {source} are its training classes ({', '.join(valid)}); "
            f"{name!r} is not one of them")
    if name in CLASS_MODELS and name not in TRAINING_CLASSES:
        text += (f"; {name} jobs use GPUs and power but train no tokens, so they have no training step "
                 f"or swing to model")
    return text
