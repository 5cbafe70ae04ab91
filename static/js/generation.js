// Generation job page. Without this script the page refreshes itself every few seconds (a <noscript> refresh);
// with it, the counts, the progress bar and the worker notice update in place every 2 s, and the page reloads
// once when the job finishes, so that the failures table and the final buttons appear.
(function () {
  "use strict";
  const section = document.querySelector("[data-generation-progress][data-progress-url]");
  if (!section) return;
  const url = section.dataset.progressUrl;
  const field = (name) => section.querySelector(`[data-field="${name}"]`);

  function show(data) {
    const progress = data.progress;
    const status = field("status");
    if (status) {
      status.textContent = data.status_display;
      status.className = `status status-${data.status}`;
    }
    Object.keys(progress).forEach((name) => {
      section.querySelectorAll(`[data-count="${name}"]`).forEach((el) => { el.textContent = progress[name]; });
    });
    const finished = progress.done + progress.failed;
    const bar = field("bar");
    if (bar) {
      bar.max = progress.total;
      bar.value = finished;
      bar.textContent = `${progress.percent} %`;
    }
    const summary = field("summary");
    const text = `${finished} of ${progress.total} questions finished (${progress.percent} %)`;
    if (summary && summary.textContent !== text) summary.textContent = text;  // announced politely (role=status)
    section.querySelectorAll("[data-notice]").forEach((notice) => {
      notice.hidden = notice.dataset.notice !== data.worker_notice;
    });
    const detail = section.querySelector("[data-notice-detail]");
    if (detail) detail.textContent = data.worker_detail || "";
  }

  window.pollProgress(url, show);
})();
