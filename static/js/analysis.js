// Analysis run page. Without this script the page refreshes itself every few seconds (a <noscript> refresh);
// with it, the progress bar and the current step update in place every 2 s, and the page reloads once when the
// run finishes, so that its tables and plots appear.
(function () {
  "use strict";
  const section = document.querySelector("[data-analysis-progress][data-progress-url]");
  if (!section) return;
  const url = section.dataset.progressUrl;
  const field = (name) => section.querySelector(`[data-field="${name}"]`);

  function show(data) {
    const status = field("status");
    if (status) {
      status.textContent = data.status_display;
      status.className = `status status-${data.status}`;
    }
    const bar = field("bar");
    if (bar) {
      bar.value = data.progress;
      bar.textContent = `${data.progress} %`;
    }
    const summary = field("summary");
    const text = data.step ? `${data.progress} %: ${data.step}` : `${data.progress} %`;
    if (summary && summary.textContent !== text) summary.textContent = text;  // announced politely (role=status)
  }

  window.pollProgress(url, show);
})();
