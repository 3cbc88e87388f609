//! The gateway's stdio when it is not a pipe: a client that connects stdin and stdout to a socket
//! (not a FIFO, so not read through the event loop) is served through tokio's portable stdio.

use crate::support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{GATEWAY, Work};

#[test]
fn a_socket_as_stdin_and_stdout_is_served() {
    let work = Work::new("stdio-socket");
    let config = work.hostile_config("serve", "");
    let (ours, theirs) = UnixStream::pair().expect("socket pair");
    let mut gateway = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(
            theirs.try_clone().expect("clone"),
        )))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::null())
        .spawn()
        .expect("gateway");
    ours.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut writer = ours.try_clone().expect("clone");
    let mut lines = BufReader::new(ours).lines();
    let mut ask = |message: &str| writer.write_all(format!("{message}\n").as_bytes());
    ask(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"socket","version":"1"}}}"#)
        .expect("initialize");
    let reply = lines.next().expect("a reply").expect("read");
    assert!(
        reply.contains(r#""id":1"#) && reply.contains("serverInfo"),
        "{reply}"
    );
    ask(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("initialized");
    ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"h__echo","arguments":{"text":"over a socket"}}}"#)
        .expect("call");
    let reply = lines
        .by_ref()
        .map(|line| line.expect("read"))
        .find(|line| line.contains(r#""id":2"#))
        .expect("the call's reply");
    assert!(reply.contains("echo: over a socket"), "{reply}");
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(work.recorded(), ["echo"]);
}
