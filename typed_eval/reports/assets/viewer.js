// The viewer's only script: a changed filter applies at once. Pages work without it.
document.querySelectorAll("form.filters select").forEach((select) => {
  select.addEventListener("change", () => select.form.requestSubmit());
});
