// regrade report: sorting and filtering of its tables. Every table is complete without this script.
(function () {
  "use strict";
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    var number = parseFloat(raw.replace("\u2212", "-"));
    return isNaN(number) || !/^[\u2212+\-]?[\d.]/.test(raw) ? raw.toLowerCase() : number;
  }
  function makeSortable(table) {
    // the last header row names every column (a row above it only groups them)
    var headers = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
    Array.prototype.forEach.call(headers, function (header, index) {
      header.classList.add("sortable");
      header.title = "sort by " + header.textContent.trim();
      header.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var ascending = header.getAttribute("data-order") !== "asc";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("data-order"); });
        header.setAttribute("data-order", ascending ? "asc" : "desc");
        rows.sort(function (a, b) {
          var x = cellKey(a, index), y = cellKey(b, index);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }
  function makeFilterable(table) {
    var names = (table.getAttribute("data-filters") || "").split(",").filter(Boolean);
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var controls = document.createElement("div");
    controls.className = "controls";
    var selects = {};
    names.forEach(function (name) {
      var values = {};
      rows.forEach(function (row) {
        (row.getAttribute("data-" + name) || "").split(" ").filter(Boolean).forEach(function (v) { values[v] = true; });
      });
      var select = document.createElement("select");
      select.className = "filter";
      select.setAttribute("aria-label", name);
      select.appendChild(new Option("every " + name, ""));
      Object.keys(values).sort().forEach(function (v) { select.appendChild(new Option(v, v)); });
      select.addEventListener("change", apply);
      selects[name] = select;
      controls.appendChild(select);
    });
    var search = document.createElement("input");
    search.type = "search";
    search.placeholder = "search";
    search.className = "filter";
    search.addEventListener("input", apply);
    controls.appendChild(search);
    var shown = document.createElement("span");
    controls.appendChild(shown);
    table.parentNode.insertBefore(controls, table);
    function apply() {
      var text = search.value.trim().toLowerCase(), visible = 0;
      rows.forEach(function (row) {
        var keep = names.every(function (name) {
          var wanted = selects[name].value;
          return !wanted || (" " + (row.getAttribute("data-" + name) || "") + " ").indexOf(" " + wanted + " ") >= 0;
        }) && (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
        row.hidden = !keep;
        if (keep) visible++;
      });
      shown.textContent = "showing " + visible + " of " + rows.length;
    }
    apply();
  }
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll("table.filterable").forEach(makeFilterable);
  window.addEventListener("hashchange", openTarget);
  openTarget();
  document.documentElement.setAttribute("data-script", "ran");
})();
