// Analysis form. Without this script, "Show the levels of this choice" reloads the page with the study chosen;
// with it, choosing a study does so at once, so the reference levels listed are always that study's.
(function () {
  "use strict";
  for (const form of document.querySelectorAll("form[data-submit-on-change]")) {
    form.addEventListener("change", () => form.submit());
  }
})();
