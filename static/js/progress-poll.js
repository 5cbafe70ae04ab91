// Shared by the pages of long jobs (generation jobs, analysis runs): fetch the job's progress JSON every 2 s and
// hand it to the page's `show`, reload once when the job has finished (so its results appear), and fall back
// to reloading, as without JavaScript, if the server cannot be reached or the session ended.
window.pollProgress = function (url, show) {
  "use strict";
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.json();
      })
      .then((data) => {
        if (data.finished) {
          window.location.reload();
          return;
        }
        show(data);
        setTimeout(poll, 2000);
      })
      .catch(() => setTimeout(() => window.location.reload(), 5000));
  }
  setTimeout(poll, 2000);
};
