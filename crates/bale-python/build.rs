fn main() {
    // Emits pyo3's `Py_3_x` cfgs, so code that reads CPython's own layouts
    // (`ints`) is compiled only for the versions whose layout it knows.
    pyo3_build_config::use_pyo3_cfgs();
    // Link the unwinder statically: otherwise `import bale` also loads
    // libgcc_s, about a quarter of a millisecond of every fresh process.
    // Named here, it resolves the unwinder before std's `-lgcc_s`, which
    // `--as-needed` then drops. tests/adversarial/test_unwinding.py checks both.
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-lib=static=gcc_eh");
    }
}
