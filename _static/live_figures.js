// The explorers of the static site (icl_lib/live_figures.py, _ext/live_figures.py). Each
// .icl-live-figure holds one <img>, one range input per control and a JSON block:
// {"controls": [{"label": "σ", "labels": ["0", "0.3", ...]}, ...],
//  "frames": [{"src": "...png", "alt": "..."}, ...]}, the frames in row-major order of
// the controls (the last control varies fastest). Moving a slider shows the frame drawn
// at build time for the new values; nothing is drawn here. Once the figure nears the
// viewport, its frames are fetched, so that a move shows its frame at once.
(function () {
  "use strict";
  function start(box) {
    var data = JSON.parse(box.querySelector("script.icl-live-frames").textContent);
    var img = box.querySelector("img.icl-live-frame");
    var inputs = Array.prototype.slice.call(box.querySelectorAll("input[type=range]"));
    function show() {
      var index = 0;
      inputs.forEach(function (input, k) {
        var stop = Number(input.value);
        var control = data.controls[k];
        index = index * control.labels.length + stop;
        var text = control.labels[stop];
        input.setAttribute("aria-valuetext", control.label + " = " + text);
        input.parentNode.querySelector("output").textContent = text;
      });
      var frame = data.frames[index];
      img.src = frame.src;
      img.alt = frame.alt;
      box.setAttribute("data-frame", String(index));
    }
    inputs.forEach(function (input) {
      input.addEventListener("input", show);
    });
    if ("IntersectionObserver" in window) {
      var seen = new IntersectionObserver(
        function (entries) {
          if (entries.some(function (e) { return e.isIntersecting; })) {
            seen.disconnect();
            data.frames.forEach(function (frame) {
              new Image().src = frame.src;
            });
          }
        },
        { rootMargin: "400px" }
      );
      seen.observe(box);
    }
  }
  function startAll() {
    document.querySelectorAll(".icl-live-figure").forEach(start);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", startAll);
  } else {
    startAll();
  }
})();
