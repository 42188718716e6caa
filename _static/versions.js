// The version switcher of every page's footer (_ext/edition.py). The published site
// holds, in the root folder of each edition of each version, a versions.json that
// tools/site_versions.py writes: [{"name": "latest", "path": "./"}, {"name": "v1.0.0",
// "path": "../v1.0.0/"}, ...], each path relative to that folder. The switcher opens the
// same page in the chosen version. A local build has no versions.json: it stays hidden.
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) {
    return;
  }
  // this file is <edition root>/_static/versions.js
  var root = new URL("../", script.src);
  function start() {
    var box = document.querySelector(".version-switcher");
    if (!box || root.protocol === "file:") {
      return;
    }
    fetch(new URL("versions.json", root))
      .then(function (response) {
        return response.ok ? response.json() : [];
      })
      .then(function (versions) {
        if (!Array.isArray(versions) || versions.length < 2) {
          return;
        }
        var select = box.querySelector("select");
        var page = window.location.href.slice(root.href.length);
        versions.forEach(function (version) {
          var option = document.createElement("option");
          option.value = new URL(version.path, root).href;
          option.textContent = version.name;
          option.selected = version.path === "./";
          select.appendChild(option);
        });
        select.addEventListener("change", function () {
          window.location.href = select.value + page;
        });
        box.hidden = false;
      })
      .catch(function () {});
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
