//! Runs the whole TCK and refreshes `tck/baseline.txt` and `docs/cypher.md`.
//!
//! `cargo run -p svc-tck --bin tck-report` (add `-- --check` to only print the summary).

use std::process::ExitCode;

fn main() -> ExitCode {
    let check_only = std::env::args().any(|a| a == "--check");
    let root = svc_tck::root();
    let only = std::env::var("TCK_ONLY").ok();
    let scenarios = match svc_tck::load(&root) {
        Ok(s) => s
            .into_iter()
            .filter(|s| only.as_ref().is_none_or(|o| s.id.contains(o.as_str())))
            .collect::<Vec<_>>(),
        Err(e) => {
            eprintln!("tck-report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runner = match svc_tck::Runner::new(&root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tck-report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let threads = svc_tck::threads();
    let records = runner.run_all(&scenarios, threads);
    println!("{}", svc_tck::report::summary(&records));
    if check_only || only.is_some() {
        for r in &records {
            if let svc_tck::Outcome::Fail(k, why) = &r.outcome {
                println!("{} {}: {}: {why}", r.id, r.name, k.label());
            }
        }
        return ExitCode::SUCCESS;
    }
    let baseline = root.join("baseline.txt");
    let docs = root.join("..").join("docs").join("cypher.md");
    for (path, text) in [
        (&baseline, svc_tck::report::baseline_text(&records)),
        (&docs, svc_tck::report::markdown(&records)),
    ] {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("tck-report: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
