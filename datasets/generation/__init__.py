"""Answer generation: jobs of one model source over one dataset, run by Celery workers.

- `jobs`: start, retry failed questions, cancel, resume, and the progress a page shows.
- `work`: claim one question, ask the model, store the answer once (or record the failure).
- `lanes`: the Celery-side loop. A source has `concurrency` lanes; each running lane keeps at most one
  request in flight, so the source's limit holds however many workers run.

Nothing here depends on a worker staying alive: a question is claimed with a lease, answers are unique per
(question, source, settings), and a lane of a dead worker is taken over once its heartbeat is stale.
"""
