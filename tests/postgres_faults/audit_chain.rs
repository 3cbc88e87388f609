//! The shared audit chain through faults: the sink waits through a server restart or gives up after
//! its reconnect window, four writers store every event once, and entries a killed writer committed
//! are integrated by the next reader.

use super::*;

#[test]
fn the_audit_sink_waits_through_a_server_restart_and_loses_no_record() {
    // Records are appended while the server restarts: each append made while it is away waits
    // for it (reconnecting, up to 10 s) instead of failing, and the chain holds every record once.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_restart");
    let sink = db.sink("writer");
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let (mut confirmed, mut unconfirmed) = (1_u64, 0_u64);
    let started = Instant::now();
    // Through the restart and a little past it.
    while !restarting.is_finished() || started.elapsed() < Duration::from_millis(300) {
        match sink.record(&audit_event((confirmed + unconfirmed) as usize)) {
            Ok(()) => confirmed += 1,
            // The one failure allowed: the connection was cut after the commit was sent, so
            // whether it landed is unknown (the caller then fails closed). Anything else — a
            // refused connection while the server was away — is a record lost.
            Err(error) if error.to_string().contains("commit was not confirmed") => {
                unconfirmed += 1
            }
            Err(error) => panic!("a record during the restart failed: {error}"),
        }
    }
    restarting.join().unwrap();
    sink.record(&audit_event(0)).unwrap();
    confirmed += 1;
    let tip = db.sink("verifier").verify().unwrap();
    // An unconfirmed batch stays queued in the sink and is stored with the next commit, once:
    // none lost, none twice.
    assert_eq!(
        tip.entries,
        confirmed + unconfirmed,
        "{} entries for {confirmed} confirmed and {unconfirmed} unconfirmed records",
        tip.entries
    );
}

#[test]
fn the_audit_sink_gives_up_on_an_absent_server_after_its_reconnect_window() {
    // With a 50 ms window, an append made while the server restarts fails instead of waiting for
    // it; once the server is back, appends succeed again and the chain holds each confirmed one.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_window");
    let sink = db
        .sink("writer")
        .with_reconnect_window(Duration::from_millis(50));
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let (mut confirmed, mut unconfirmed, mut refused) = (1_u64, 0_u64, 0_u64);
    let mut longest = Duration::ZERO;
    while !restarting.is_finished() {
        let started = Instant::now();
        match sink.record(&audit_event(confirmed + unconfirmed + refused)) {
            Ok(()) => confirmed += 1,
            Err(error) if error.to_string().contains("commit was not confirmed") => {
                unconfirmed += 1
            }
            Err(_) => refused += 1,
        }
        longest = longest.max(started.elapsed());
    }
    restarting.join().unwrap();
    assert!(refused > 0, "no append failed while the server was away");
    // 50 ms of waiting, a connect attempt refused at once, and a pause: far below the 10 s default.
    assert!(
        longest < Duration::from_secs(3),
        "an append waited {longest:?}"
    );
    sink.record(&audit_event(u64::MAX)).unwrap();
    confirmed += 1;
    let tip = db.sink("verifier").verify().unwrap();
    // Refused and unconfirmed appends failed their callers (whose steps did not happen) but stay
    // queued in the sink: the next commit stores each of them once.
    assert_eq!(tip.entries, confirmed + unconfirmed + refused);
}

#[test]
fn entries_of_a_writer_killed_before_integration_are_integrated_by_the_next_reader() {
    let Some(url) = server_url() else { return };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_killed");
    drop(db.sink("setup"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOLGATE_CHILD_ROLE", "audit_unintegrated")
        .env("TOOLGATE_NODE_URL", db.url("child"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let said = std::io::BufRead::lines(stdout)
        .map_while(Result::ok)
        .find(|line| line.contains("CHILD RECORDED"))
        .expect("the child recorded");
    assert!(said.ends_with(&AUDIT_UNINTEGRATED.to_string()), "{said}");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut admin = db.admin();
    let count = |admin: &mut postgres::Client, table: &str| -> i64 {
        admin
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    };
    // Committed, not integrated: every entry waits in the queue, none is in the chain.
    assert_eq!(
        count(&mut admin, "toolgate_audit_queue"),
        AUDIT_UNINTEGRATED as i64
    );
    assert_eq!(count(&mut admin, "toolgate_audit"), 0);
    // A reader on another node integrates them before it reads: all there, once, in order.
    let tip = db.sink("reader").verify().unwrap();
    assert_eq!(tip.entries, AUDIT_UNINTEGRATED);
    assert_eq!(count(&mut admin, "toolgate_audit_queue"), 0);
    let distinct: i64 = admin
        .query_one("SELECT count(DISTINCT event) FROM toolgate_audit", &[])
        .unwrap()
        .get(0);
    assert_eq!(distinct, AUDIT_UNINTEGRATED as i64);
}

#[test]
fn four_writers_through_a_server_restart_store_every_event_once() {
    // Group commit puts several threads' events in one batch; a restart cuts batches off before,
    // at and after their commits. Every event recorded — confirmed or not — is stored exactly
    // once: the unconfirmed are retried by key, never stored twice.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_restart_threads");
    let sink = Arc::new(db.sink("writer"));
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let restarted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (sink, next, restarted) =
                (Arc::clone(&sink), Arc::clone(&next), Arc::clone(&restarted));
            std::thread::spawn(move || {
                let mut failed = 0_u64;
                while !restarted.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if sink.record(&audit_event(n)).is_err() {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    restarting.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    restarted.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    sink.sync().unwrap();
    let recorded = next.load(std::sync::atomic::Ordering::Relaxed);
    let tip = db.sink("verifier").verify().unwrap();
    assert_eq!(tip.entries, recorded, "every recorded event stored");
    let distinct: i64 = db
        .admin()
        .query_one("SELECT count(DISTINCT event) FROM toolgate_audit", &[])
        .unwrap()
        .get(0);
    assert_eq!(distinct as u64, recorded, "none stored twice");
}
