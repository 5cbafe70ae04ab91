"""Answer generation: jobs of one model source over one dataset, run by Celery workers.

- `jobs`: start, retry failed questions, cancel, resume, and the progress a page shows.
- `work`: claim one question, ask the model, store the answer once (or record the failure).
- `answer_kind`: the engine's `answer` kind (engine/DESIGN.md, "Where generation stands"): one call answers
  one question of a job on the source's endpoint, sharing its limits with every other kind of work there.
- `lanes`: the Celery-side loop. A source has `concurrency` lanes; each running lane keeps at most one
  request in flight, so the source's limit holds however many workers run.

Nothing here depends on a worker staying alive: a question is claimed with a lease, answers are unique per
(question, source, settings), and a lane of a dead worker is taken over once its heartbeat is stale.
"""
