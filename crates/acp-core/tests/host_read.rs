//! Unix: the agent's stdout read on the host's thread (`read_on_host`),
//! against the repo's mock agent, with the test as the host.
#![cfg(unix)]

use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use acp_core::connection::{Batch, Fed};
use acp_core::{AgentCommand, Connection, ConnectionConfig, DeliverySink};
use serde_json::{json, Value};

/// A sink whose `deliver` returns long after the host has the batch, as
/// when the delivery thread is preempted right after handing it over.
struct LateSink(Mutex<mpsc::Sender<Batch>>);

impl DeliverySink for LateSink {
    fn deliver(&self, batch: Batch) -> bool {
        let sent = self.0.lock().unwrap().send(batch).is_ok();
        std::thread::sleep(Duration::from_millis(800));
        sent
    }
}

fn guard() -> Duration {
    let scale = std::env::var("ACP_TEST_TIME_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    Duration::from_secs(10) * scale
}

fn items(text: &str) -> Vec<Value> {
    let flat: Vec<Value> = serde_json::from_str(text).expect("a batch is a JSON array");
    flat.chunks(3)
        .map(|item| Value::Array(item.to_vec()))
        .collect()
}

/// Read on the host's thread until a read hands over a batch.
fn read_here(conn: &Connection) -> Result<Batch, &'static str> {
    let fd = conn
        .host_stdout_fd()
        .expect("the host has a copy of the fd");
    let until = Instant::now() + guard();
    while Instant::now() < until {
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, 100) };
        match conn.host_read() {
            Fed::Batch(batch) => return Ok(batch),
            Fed::Nothing => continue,
            Fed::Full => return Err("the core took the fd back"),
        }
    }
    Err("nothing to read within the guard")
}

#[test]
fn a_host_that_answers_a_delivered_batch_reads_the_reply_itself_before_delivery_returns() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let agent = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../mock-agent/agent.mjs");
    let config = ConnectionConfig {
        command: AgentCommand {
            program: "node".into(),
            args: vec![agent.to_str().unwrap().into()],
            ..Default::default()
        },
        read_on_host: true,
        ..Default::default()
    };
    let (tx, rx) = mpsc::channel();
    let sink = Arc::new(LateSink(Mutex::new(tx)));
    let conn = Connection::spawn(config, sink, rt.handle()).expect("node must be installed");
    conn.host_polls_stdout();

    // The core reads the first answer and queues it; the host has it while
    // `deliver` has not returned.
    let id = conn
        .request("initialize", Some(r#"{"protocolVersion":1}"#), None)
        .unwrap();
    let batch = rx.recv_timeout(guard()).expect("the answer is delivered");
    assert_eq!(items(&batch.text)[0][1], id.get());
    drop(batch);
    conn.ack();

    // The host acts on it at once: the reply comes while the delivery
    // thread is still in `deliver`, and nothing is ahead of it.
    let params = json!({"cwd": "/tmp", "mcpServers": []}).to_string();
    let id = conn.request("session/new", Some(&params), None).unwrap();
    let batch = read_here(&conn).expect("the reply is read and handed over on the host's thread");
    let answer = &items(&batch.text)[0];
    assert_eq!(answer[1], id.get());
    assert!(answer[2]["result"]["sessionId"].is_string());
    conn.kill();
}
