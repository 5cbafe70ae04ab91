// Rating page enhancements. The form works without this script; with it:
// conditional questions show only when they apply, drafts autosave, keys 1-9 pick options,
// Ctrl/Cmd+Enter submits, active time on task is measured, and "Quote the selected text" copies a selection
// of the answer into a list question's quote field (without it, the quote is pasted by hand).
(function () {
  "use strict";
  const form = document.querySelector("[data-rate-form]");
  if (!form) return;

  document.documentElement.classList.add("js-on");
  document.querySelectorAll(".js-only").forEach((el) => { el.hidden = false; });
  document.querySelectorAll("[data-no-js-hint]").forEach((el) => { el.hidden = true; });
  const summary = document.querySelector("[data-error-summary]");
  if (summary) summary.focus();

  // --- Conditional questions -------------------------------------------------------------
  function checkedValues(name) {
    // Disabled inputs belong to hidden questions, whose answers do not count.
    return Array.from(form.querySelectorAll(`[name="${name}"]:checked:not(:disabled)`)).map((input) => input.value);
  }
  function updateConditionals() {
    // In page order, so a question hidden above hides the questions that depend on it.
    form.querySelectorAll(".conditional").forEach((section) => {
      const wanted = section.dataset.in.split(" ");
      const show = checkedValues(section.dataset.showWhen).some((value) => wanted.includes(value));
      section.hidden = !show;
      // Hidden answers must not be sent: the server refuses conditional answers that do not apply.
      section.querySelectorAll("input, textarea, select").forEach((input) => { input.disabled = !show; });
    });
  }
  form.addEventListener("change", updateConditionals);
  updateConditionals();

  // --- Quoting the answer ----------------------------------------------------------------------
  // The last selection made inside an answer shown: clicking the button may move the selection, so it is
  // remembered as it changes.
  let quoted = "";
  function selectionInAnswer() {
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || selection.rangeCount === 0) return "";
    const node = selection.getRangeAt(0).commonAncestorContainer;
    const element = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    return element && element.closest(".answer") ? selection.toString().trim() : "";
  }
  document.addEventListener("selectionchange", () => {
    const text = selectionInAnswer();
    if (text) quoted = text;
  });
  form.querySelectorAll("[data-quote-button]").forEach((button) => {
    button.addEventListener("click", () => {
      const field = document.getElementById(button.dataset.quoteButton);
      const status = button.parentElement.querySelector("[data-quote-status]");
      const text = selectionInAnswer() || quoted;
      if (!text) {
        if (status) status.textContent = "Select words of the answer first.";
        return;
      }
      field.value = text;
      field.dispatchEvent(new Event("input", { bubbles: true }));
      if (status) status.textContent = "Quoted.";
      field.focus();
    });
  });

  // --- Active time: counted while the page is visible and the rater used it in the last minute ---
  const activeField = form.querySelector("[data-active-seconds]");
  let activeSeconds = 0;
  let lastInteraction = Date.now();
  ["keydown", "mousedown", "mousemove", "scroll", "touchstart", "focusin"].forEach((type) =>
    document.addEventListener(type, () => { lastInteraction = Date.now(); }, { passive: true }));
  setInterval(() => {
    if (document.visibilityState === "visible" && Date.now() - lastInteraction < 60000) {
      activeSeconds += 1;
      activeField.value = activeSeconds;
    }
  }, 1000);

  // --- Autosave drafts ---------------------------------------------------------------------
  const status = document.querySelector("[data-autosave-status]");
  let timer = null;
  function saveDraft() {
    const data = new FormData(form);
    fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin" })
      .then((response) => {
        if (response.ok) return "Draft saved.";
        // The server says why in plain text (too long, a locked study); anything else is a generic failure.
        const plain = (response.headers.get("Content-Type") || "").startsWith("text/plain");
        return plain ? response.text() : "Draft not saved.";
      })
      .then((message) => { if (status) status.textContent = message; })
      .catch(() => { if (status) status.textContent = "Draft not saved (offline?)."; });
  }
  function scheduleSave() {
    clearTimeout(timer);
    timer = setTimeout(saveDraft, 800);
  }
  form.addEventListener("change", scheduleSave);
  form.addEventListener("input", scheduleSave);

  // --- Keyboard shortcuts --------------------------------------------------------------------
  function visibleQuestions() {
    return Array.from(form.querySelectorAll("fieldset[data-question]")).filter((fs) => !fs.closest("[hidden]"));
  }
  function currentQuestion() {
    const focused = document.activeElement && document.activeElement.closest("fieldset[data-question]");
    if (focused && !focused.closest("[hidden]")) return focused;
    return visibleQuestions().find((fs) => !fs.querySelector("input:checked")) || null;
  }
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    const target = event.target;
    if (target.matches("textarea, select, input[type=text], input[type=number]") || event.altKey || event.ctrlKey || event.metaKey) return;
    if (!/^[1-9]$/.test(event.key)) return;
    const fieldset = currentQuestion();
    if (!fieldset) return;
    const input = fieldset.querySelectorAll("input")[Number(event.key) - 1];
    if (!input || input.disabled) return;
    event.preventDefault();
    if (input.type === "checkbox") input.checked = !input.checked;
    else input.checked = true;
    input.focus();
    input.dispatchEvent(new Event("change", { bubbles: true }));
  });
})();
