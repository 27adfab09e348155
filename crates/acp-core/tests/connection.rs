//! The core against real processes: the repo's mock agent and small Node
//! scripts (portable across the platforms CI tests).

use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use acp_core::connection::Batch;
use acp_core::rpc::RequestId;
use acp_core::{AgentCommand, Connection, ConnectionConfig, DeliverySink};
use serde_json::{json, Value};

/// `ACP_TEST_TIME_SCALE` under an emulator (scripts/platform-test.mjs), else 1.
fn time_scale() -> u32 {
    std::env::var("ACP_TEST_TIME_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

/// How long to wait for a delivery before calling it a hang.
fn guard() -> Duration {
    Duration::from_secs(10) * time_scale()
}

/// An agent that stays up and never reads its stdin.
const NEVER_READS: &str = "setTimeout(() => {}, 30000)";

struct ChannelSink {
    tx: std::sync::Mutex<mpsc::Sender<Batch>>,
    /// How long `deliver` takes to return after the host has the batch
    /// (zero; long: a delivery thread preempted right after the hand-over).
    returns_after: Duration,
}

impl DeliverySink for ChannelSink {
    fn deliver(&self, batch: Batch) -> bool {
        assert_eq!(
            batch.ascii,
            batch.text.is_ascii(),
            "the ascii flag is exact"
        );
        let sent = self.tx.lock().unwrap().send(batch).is_ok();
        std::thread::sleep(self.returns_after);
        sent
    }
}

/// A batch's items, as `[kind, a, b]` arrays.
fn items(batch: &str) -> Vec<Value> {
    let flat: Vec<Value> = serde_json::from_str(batch).expect("a batch is a JSON array");
    assert_eq!(flat.len() % 3, 0, "items are triples");
    flat.chunks(3)
        .map(|item| Value::Array(item.to_vec()))
        .collect()
}

fn mock_agent() -> String {
    let agent = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../mock-agent/agent.mjs");
    agent.to_str().unwrap().into()
}

struct Harness {
    _rt: tokio::runtime::Runtime,
    conn: Connection,
    rx: mpsc::Receiver<Batch>,
    backlog: std::collections::VecDeque<Value>,
}

impl Harness {
    fn spawn(program: &str, args: &[&str]) -> Result<Self, acp_core::transport::SpawnError> {
        Self::spawn_with(program, args, |_| {})
    }

    fn spawn_with(
        program: &str,
        args: &[&str],
        tune: impl FnOnce(&mut ConnectionConfig),
    ) -> Result<Self, acp_core::transport::SpawnError> {
        Self::start(program, args, tune, Duration::ZERO)
    }

    fn start(
        program: &str,
        args: &[&str],
        tune: impl FnOnce(&mut ConnectionConfig),
        returns_after: Duration,
    ) -> Result<Self, acp_core::transport::SpawnError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let mut config = ConnectionConfig {
            command: AgentCommand {
                program: program.into(),
                args: args.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            // Long enough for an emulated agent to exit on EOF by itself.
            close_grace: Duration::from_millis(300) * time_scale(),
            term_grace: Duration::from_millis(300) * time_scale(),
            ..Default::default()
        };
        tune(&mut config);
        let sink = Arc::new(ChannelSink {
            tx: std::sync::Mutex::new(tx),
            returns_after,
        });
        let conn = Connection::spawn(config, sink, rt.handle())?;
        Ok(Self {
            _rt: rt,
            conn,
            rx,
            backlog: Default::default(),
        })
    }

    /// A one-off agent written as a Node script (portable, unlike `sh`).
    fn node(script: &str) -> Self {
        Self::spawn("node", &["-e", script]).expect("node must be installed")
    }

    fn mock(args: &[&str]) -> Self {
        let agent = mock_agent();
        let mut all = vec![agent.as_str()];
        all.extend_from_slice(args);
        Self::spawn("node", &all).expect("node must be installed")
    }

    /// Next delivered item, acknowledging each batch as the host would.
    fn next(&mut self) -> Value {
        loop {
            if let Some(v) = self.backlog.pop_front() {
                return v;
            }
            let batch = self
                .rx
                .recv_timeout(guard())
                .expect("no delivery within the guard");
            self.conn.ack();
            self.backlog.extend(items(&batch.text));
        }
    }

    /// Items up to and including the answer to request `id`.
    fn until_answer(&mut self, id: RequestId) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let item = self.next();
            let done = (item[0] == 2 || item[0] == 3) && item[1] == id.get();
            seen.push(item);
            if done {
                return seen;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self
            .conn
            .request(method, Some(&params.to_string()), None)
            .unwrap();
        let mut items = self.until_answer(id);
        let answer = items.pop().unwrap();
        (items, answer)
    }

    /// A new session's id (after `initialize`).
    fn new_session(&mut self) -> String {
        let (_, session) = self.call("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
        session[2]["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

#[test]
fn a_turn_is_delivered_in_wire_order_with_its_response_last() {
    let mut h = Harness::mock(&[]);
    let (_, init) = h.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init[0], 2);
    assert_eq!(init[2]["result"]["protocolVersion"], 1);
    let sid = h.new_session();
    let (before, answer) = h.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "burst:3000"}]}),
    );
    // session/update items have their own kind: params, then 0.
    let updates: Vec<&Value> = before.iter().filter(|i| i[0] == 8).collect();
    assert_eq!(updates.len(), 3000);
    for (n, u) in updates.iter().enumerate() {
        assert_eq!(u[1]["update"]["content"]["text"], format!("b{n}"));
        assert_eq!(u[2], 0);
    }
    assert_eq!(answer[2]["result"]["stopReason"], "end_turn");
    h.conn.close();
    loop {
        let item = h.next();
        if item[0] == 5 && item[1] == "exit" {
            assert_eq!(item[2]["exitCode"], 0);
            assert_eq!(item[2]["reason"], "closed");
            break;
        }
    }
}

#[test]
fn cancel_session_answers_the_open_permission_request() {
    let mut h = Harness::mock(&["--string-ids"]);
    h.call("initialize", json!({"protocolVersion": 1}));
    let sid = h.new_session();
    let prompt = h
        .conn
        .request(
            "session/prompt",
            Some(
                &json!({"sessionId": sid, "prompt": [{"type":"text","text":"permission"}]})
                    .to_string(),
            ),
            None,
        )
        .unwrap();
    // Wait for the permission request, then cancel without answering it.
    let token = loop {
        let item = h.next();
        if item[0] == 1 {
            assert_eq!(item[2]["method"], "session/request_permission");
            assert!(item[2]["id"].as_str().unwrap().starts_with("srv_"));
            break item[1].as_u64().unwrap();
        }
    };
    assert_eq!(h.conn.cancel_session(&sid).unwrap(), 1);
    let items = h.until_answer(prompt);
    assert!(items
        .iter()
        .any(|i| i[0] == 4 && i[1] == token && i[2] == "cancelled"));
    assert_eq!(
        items.last().unwrap()[2]["result"]["stopReason"],
        "cancelled"
    );
    // A late answer from the host is ignored: the request is settled.
    assert!(!h
        .conn
        .respond(token, r#"{"outcome":{"outcome":"cancelled"}}"#));
}

#[test]
fn a_crash_fails_pending_requests_with_exit_code_and_stderr() {
    let mut h = Harness::node(
        "process.stdin.once('data', () => { process.stderr.write('dying now\\n'); process.exit(7); })",
    );
    let id = h.conn.request("initialize", Some("{}"), None).unwrap();
    let items = h.until_answer(id);
    let failed = items.last().unwrap();
    assert_eq!(failed[0], 3);
    assert_eq!(failed[2]["code"], "ERR_ACP_CLOSED");
    assert_eq!(failed[2]["exitCode"], 7);
    assert!(failed[2]["stderrTail"]
        .as_str()
        .unwrap()
        .contains("dying now"));
    let exit = h.next();
    assert_eq!(
        (exit[0].clone(), exit[1].clone()),
        (json!(5), json!("exit"))
    );
    // Calls after the exit fail at once.
    assert!(matches!(
        h.conn.request("x", None, None),
        Err(acp_core::connection::CallError::Closed(Some(info))) if info.exit_code == Some(7)
    ));
}

#[test]
fn spawn_failure_names_the_program_and_errno() {
    let err = Harness::spawn("/no/such/agent", &[]).err().unwrap();
    assert_eq!(err.errno, "ENOENT");
    assert!(err.to_string().contains("/no/such/agent"));
}

#[test]
fn request_timeout_fails_only_that_request() {
    let mut h = Harness::node(NEVER_READS);
    let id = h
        .conn
        .request("slow", None, Some(Duration::from_millis(100)))
        .unwrap();
    let items = h.until_answer(id);
    let failed = items.last().unwrap();
    assert_eq!(failed[2]["code"], "ERR_ACP_TIMEOUT");
    assert_eq!(failed[2]["timeoutMs"], 100);
    assert_eq!(h.conn.pending_requests(), 0);
    h.conn.kill();
    loop {
        let item = h.next();
        if item[0] == 5 && item[1] == "exit" {
            #[cfg(unix)]
            assert_eq!(item[2]["signal"], "SIGKILL");
            assert_eq!(item[2]["reason"], "killed");
            break;
        }
    }
}

#[test]
fn waiting_requests_hold_no_task_each_and_a_short_timeout_still_fires_first() {
    let mut h = Harness::node(NEVER_READS);
    let tasks = || h._rt.metrics().num_alive_tasks();
    let before = tasks();
    // Many calls wait, each with a long timeout: they cost table entries,
    // not a runtime task (and a wakeup of the runtime to start it) each.
    let waiting: Vec<RequestId> = (0..300)
        .map(|_| {
            h.conn
                .request("slow", None, Some(Duration::from_secs(600)))
                .unwrap()
        })
        .collect();
    let grown = tasks().saturating_sub(before);
    assert!(
        grown < 10,
        "{grown} more runtime tasks for 300 waiting calls"
    );
    // A call due before all of them still times out on its own.
    let short = h
        .conn
        .request("slow", None, Some(Duration::from_millis(100)))
        .unwrap();
    let items = h.until_answer(short);
    assert_eq!(items.last().unwrap()[2]["code"], "ERR_ACP_TIMEOUT");
    assert_eq!(h.conn.pending_requests(), waiting.len());
    h.conn.kill();
    loop {
        let item = h.next();
        if item[0] == 5 && item[1] == "exit" {
            break;
        }
    }
    // The exit failed every call still waiting.
    assert_eq!(h.conn.pending_requests(), 0);
}

#[test]
fn lines_written_directly_and_queued_stay_whole_and_in_order() {
    // The agent echoes every line back: what we wrote arrives as notifications.
    let mut h = Harness::node("process.stdin.pipe(process.stdout)");
    let sizes = [10usize, 200_000, 3, 70_000, 1, 500_000, 64];
    let total = 600;
    for n in 0..total {
        let pad = "p".repeat(sizes[n % sizes.len()]);
        // Every third line is not ASCII: batches must say which they are.
        let word = if n % 3 == 0 { "é中😀" } else { "plain" };
        let params = json!({"n": n, "pad": pad, "word": word}).to_string();
        h.conn.notify("echo", Some(&params)).unwrap();
    }
    for n in 0..total {
        let item = h.next();
        assert_eq!(item[0], 0, "{item}");
        assert_eq!(item[2]["n"], n);
        assert_eq!(
            item[2]["pad"].as_str().unwrap().len(),
            sizes[n % sizes.len()]
        );
        assert_eq!(item[2]["word"], if n % 3 == 0 { "é中😀" } else { "plain" });
    }
}

#[test]
fn an_agent_that_stops_reading_makes_sends_fail_with_backpressure() {
    let h = Harness::spawn_with("node", &["-e", NEVER_READS], |c| {
        c.max_write_queue_bytes = 1 << 20;
    })
    .unwrap();
    let big = json!({"pad": "x".repeat(256 * 1024)}).to_string();
    let mut sent = 0;
    let err = loop {
        match h.conn.notify("fill", Some(&big)) {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
        assert!(sent < 100, "never pushed back");
    };
    assert!(
        matches!(err, acp_core::connection::CallError::Backpressure(_)),
        "{err}"
    );
    // The queue alone holds this many; whatever the pipe took already is on
    // top (none yet, at times, under Wine).
    let queue_holds = (1 << 20) / (big.len() + 1);
    assert!(sent >= queue_holds, "{sent} < {queue_holds}");
    h.conn.kill();
}

#[test]
fn a_burst_of_chunks_keeps_wire_order_and_the_batch_item_cap() {
    // A read's text chunk lines travel grouped; a batch still holds at
    // most batch_max_messages items, and the answer comes after them all.
    let mut h =
        Harness::spawn_with("node", &[&mock_agent()], |c| c.batch_max_messages = 7).unwrap();
    h.call("initialize", json!({"protocolVersion": 1}));
    let sid = h.new_session();
    let id = h
        .conn
        .request(
            "session/prompt",
            Some(
                &json!({"sessionId": sid, "prompt": [{"type": "text", "text": "burst:3000 big:200000 burst:5"}]})
                    .to_string(),
            ),
            None,
        )
        .unwrap();
    let mut texts = Vec::new();
    let mut biggest = 0;
    loop {
        let batch =
            h.rx.recv_timeout(guard())
                .expect("no delivery within the guard");
        h.conn.ack();
        let items = items(&batch.text);
        biggest = biggest.max(items.len());
        let mut answered = false;
        for item in &items {
            if item[0] == 8 {
                texts.push(
                    item[1]["update"]["content"]["text"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            } else if item[0] == 2 && item[1] == id.get() {
                answered = true;
            }
        }
        if answered {
            break;
        }
    }
    assert!(biggest <= 7, "a batch held {biggest} items");
    // A chunk too big for a group goes alone, in its place.
    let mut want: Vec<String> = (0..3000).map(|n| format!("b{n}")).collect();
    want.push("x".repeat(200_000));
    want.extend((0..5).map(|n| format!("b{n}")));
    assert_eq!(texts, want);
}

/// Unix: the agent's stdout read on the host's thread (`read_on_host`),
/// with the test as the host.
#[cfg(unix)]
mod read_on_host {
    use super::*;
    use acp_core::connection::Fed;
    use std::time::Instant;

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
        // `deliver` returns long after the host has the batch.
        let mut h = Harness::start(
            "node",
            &[&mock_agent()],
            |c| c.read_on_host = true,
            Duration::from_millis(800),
        )
        .expect("node must be installed");
        h.conn.host_polls_stdout();
        // The core reads the first answer and queues it; the host has it
        // (and acknowledges it) while `deliver` has not returned.
        h.call("initialize", json!({"protocolVersion": 1}));
        // The host acts on it at once: the reply comes while the delivery
        // thread is still in `deliver`, and nothing is ahead of it.
        let params = json!({"cwd": "/tmp", "mcpServers": []}).to_string();
        let id = h.conn.request("session/new", Some(&params), None).unwrap();
        let batch =
            read_here(&h.conn).expect("the reply is read and handed over on the host's thread");
        let answer = &items(&batch.text)[0];
        assert_eq!(answer[1], id.get());
        assert!(answer[2]["result"]["sessionId"].is_string());
        h.conn.kill();
    }
}
