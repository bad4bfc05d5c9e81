fn main() {
    let lock = std::env::args().any(|a| a == "--lock");
    let p = models::workload::bench::BenchParams {
        lock,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let r = models::workload::bench::run(&p).unwrap();
    let el = t.elapsed().as_secs_f64();
    println!(
        "{r:?}\nwall {el:.3}s  events/s {:.1}M",
        r.events as f64 / el / 1e6
    );
}
