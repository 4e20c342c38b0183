//! The shared HTTP suite on smol.

#[macro_use]
#[path = "../../suite/http.rs"]
mod suite;

run_suite!(ferry_smol::block_on_threads);
