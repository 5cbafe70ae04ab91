"""Answer generation: jobs of one model source over one dataset, made as calls of the model-call engine.

- `jobs`: start (one `answer` call per question to ask), retry failed questions, cancel, resume, and the
  progress a page shows, all read from the job's batch of calls.
- `answer_kind`: the engine's `answer` kind (engine/DESIGN.md, "Generation"): one call answers one question of
  a job on the source's endpoint, sharing its limits with every other kind of work there.
- `work`: a question's request, and its answer stored once.

Nothing here depends on a worker staying alive: the engine claims a call with a lease and takes over the lanes
of a dead worker, and answers are unique per (question, source, settings).
"""
