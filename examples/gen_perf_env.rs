//! Prints a synthetic full-scale env: `cargo run --example gen_perf_env -- 144 > envs/perf-144.yaml`.
#[path = "../benches/support/perf_env.rs"]
mod perf_env;

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(144);
    print!("{}", perf_env::perf_env(n));
}
