document.querySelectorAll("table.sortable").forEach((table) => {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, col) => {
    th.querySelector("button").addEventListener("click", () => {
      const dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir);
      const body = table.tBodies[0];
      const key = (row) => row.cells[col].dataset.v;
      const rows = Array.from(body.rows).sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === "" || y === "") return (x === "") - (y === "");
        const nx = Number(x), ny = Number(y);
        const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y, undefined, {numeric: true}) : nx - ny;
        return dir === "ascending" ? c : -c;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
});
document.querySelectorAll("div.case-grid").forEach((grid) => {
  const rows = Array.from(grid.querySelectorAll("table.cases tbody tr"));
  const texts = rows.map((row) => row.textContent.toLowerCase());
  const search = grid.querySelector("input.case-search");
  const count = grid.querySelector(".case-count");
  const update = () => {
    const picked = grid.querySelector("input[type=radio]:checked").value;
    const words = search.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((row, i) => {
      const keep = (picked === "all" || row.dataset.f.split(" ").includes(picked)) && texts[i].includes(words);
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = `${shown.toLocaleString("en")} of ${rows.length.toLocaleString("en")} cases`;
  };
  grid.querySelectorAll("input[type=radio]").forEach((radio) => radio.addEventListener("change", update));
  search.addEventListener("input", update);
});
