// New variant run: show only the chosen generator's levels. Without this script every generator's levels are
// shown, each in its own fieldset, and the server refuses a level of another generator.
(function () {
  "use strict";
  const select = document.getElementById("id_generator");
  const groups = document.querySelectorAll("[data-generator-levels]");
  if (!select || !groups.length) return;

  function show() {
    groups.forEach((group) => {
      const chosen = group.dataset.generatorLevels === select.value;
      group.hidden = !chosen;
      // A hidden group's boxes are not sent, so a level ticked before changing generator cannot be refused.
      group.querySelectorAll("input").forEach((input) => { input.disabled = !chosen; });
    });
  }

  select.addEventListener("change", show);
  show();
})();
