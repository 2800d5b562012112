//! The GPU suite: everything that needs a GPU, snapshot-tested where it is deterministic.
//! `cargo xtask test` runs it (`--gpu` to require it, `--no-gpu` to skip it); the self-contained
//! build carries it compiled, so it also runs where there is no Rust toolchain.

mod grading;
mod headers;
mod lessons;
mod ptx_reads;
