// Emits pyo3's `Py_3_x` cfgs, so code that reads CPython's own layouts
// (`ints`) is compiled only for the versions whose layout it knows.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
