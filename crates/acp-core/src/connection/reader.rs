//! The stdout side: frame lines, classify each one, settle responses
//! against the pending table and queue everything, in wire order, for the
//! host.

use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;

use super::builtin_route;
use super::event::{Event, Line};
use super::shared::Shared;
use super::text_run::TextRun;
use super::trace::{Kind, WireMeta};
use super::worker_slice;
use crate::acp::{self, methods, session_id_of};
use crate::rpc::json_str;
use crate::rpc::{self, AgentRequestId, Full, Inbound, IncomingRequest, Invalid, RequestId};
use crate::transport::{Frame, LineFramer};
use crate::view;
use crate::vocabulary::ErrorCode as HostError;

/// A read of short lines takes up to this much of the pipe (it is widened
/// to 1 MiB at spawn): against an agent flooding short lines, small reads
/// spend the reader's time in the kernel, waiting on the pipe's lock while
/// the agent refills it and woken each read. Long lines are read a worker
/// slice at a time: a bigger read leaves them cold in memory by the time
/// they are framed.
pub(super) const READ_BYTES: usize = 1024 * 1024;
/// Lines shorter than this on average (in the last read) let the next read
/// grow: the per-read cost is then spread over more lines than the cache
/// cost of a big read adds.
const SHORT_LINE_BYTES: usize = 1024;
/// What is handled per worker slice, at most: the other connections'
/// readers run between slices, so this bounds how long a flooding agent
/// holds the worker, while a slice still carries enough messages that the
/// yields cost nothing measurable.
pub(super) const SLICE_BYTES: usize = 32 * 1024;
/// How much of a bad line is quoted back in an event.
const QUOTE_BYTES: usize = 200;

/// `max_items`: the most items a batch holds (`batchMaxMessages`).
pub(super) async fn run_reader(
    mut stdout: ChildStdout,
    shared: Arc<Shared>,
    max_line: usize,
    max_items: usize,
) {
    let mut framer = LineFramer::new(max_line);
    let mut buf = vec![0u8; SLICE_BYTES];
    // How much the next read takes (see READ_BYTES): doubles while reads
    // of short lines come back full, back to a slice's worth otherwise.
    let mut want = SLICE_BYTES;
    let mut ready: Vec<Event> = Vec::with_capacity(256);
    let mut failed = None;
    let mut run = TextRun::new(max_items);
    loop {
        let n = match stdout.read(&mut buf[..want]).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                failed = Some(shared.read_error("stdout", &e));
                break;
            }
        };
        // One clock read per read: its lines arrived together.
        let at = Instant::now();
        let full = n == want;
        let mut lines = 0;
        for slice in buf[..n].chunks(SLICE_BYTES) {
            framer.push(slice, |frame| {
                lines += 1;
                let big = matches!(frame, Frame::Line(line) if line.len() >= BIG_LINE_BYTES);
                off_worker_if(big, || on_frame(&shared, frame, at, &mut run, &mut ready));
            });
            run.flush(&shared, &mut ready);
            if !shared.queue.queue_all(&mut ready).await {
                return;
            }
            // One slice's bytes at a time: while an agent floods, the other
            // connections' tasks on the shared worker still run between
            // (tokio's own cooperative budget lets one task go on for far
            // longer), and the host's event loop gets the CPU when it
            // waits for it.
            worker_slice::yield_point().await;
        }
        want = if full && n < SHORT_LINE_BYTES * lines {
            (want * 2).min(READ_BYTES)
        } else {
            SLICE_BYTES
        };
        if buf.len() < want {
            buf.resize(want, 0);
        }
    }
    let at = Instant::now();
    framer.finish(|frame| on_frame(&shared, frame, at, &mut run, &mut ready));
    run.flush(&shared, &mut ready);
    ready.extend(failed);
    shared.queue.queue_all(&mut ready).await;
}

/// Lines this long are handled with the worker handed over to another
/// thread: checking, classifying, tracing and folding one walks it a few
/// times, which the other connections' tasks on the shared worker would
/// otherwise wait for.
const BIG_LINE_BYTES: usize = 1024 * 1024;

/// Run `handle` (one frame's work) in place; for a big line, with this
/// thread's worker given to another thread first, so that the other
/// connections keep being read meanwhile. Order is kept: this reader
/// goes on only once the line is handled.
fn off_worker_if(big: bool, handle: impl FnOnce()) {
    let multi_thread = || {
        tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
    };
    if big && multi_thread() {
        tokio::task::block_in_place(handle);
    } else {
        handle();
    }
}

/// One frame; `at`: when the chunk it ended in was read; `run`: the text
/// chunks of this read so far.
pub(super) fn on_frame(
    shared: &Arc<Shared>,
    frame: Frame<'_>,
    at: Instant,
    run: &mut TextRun,
    out: &mut Vec<Event>,
) {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::Oversized { bytes } => {
            run.flush(shared, out);
            out.push(protocol_error(
                shared,
                "oversized",
                &format!("skipped a {bytes}-byte line over the max line size"),
                b"",
            ));
            return;
        }
    };
    // One pass: ASCII (nearly every line: JSON escapes the rest) is valid
    // UTF-8, and the batch it lands in need not be scanned again.
    let ascii = rpc::all_ascii(line);
    let checked = if ascii {
        // SAFETY: ASCII bytes are valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(line) })
    } else {
        std::str::from_utf8(line)
    };
    let line_of = |text: &str| Line {
        text: text.to_owned(),
        ascii,
    };
    let text = match checked {
        Ok(text) => text,
        Err(e) => {
            run.flush(shared, out);
            let lossy = String::from_utf8_lossy(line);
            shared.trace_received(
                WireMeta::received(at, Kind::Invalid, None, None),
                &lossy,
                out,
            );
            out.push(protocol_error(
                shared,
                "badJson",
                &format!("invalid UTF-8: {e}"),
                line,
            ));
            return;
        }
    };
    if let Some(chunk) = view::scan_text_line(text, &mut run.shape) {
        // The hot path, viewed or not: a text chunk read in one pass (a
        // flood's next line of the same shape by comparing its envelope),
        // and exactly what the general path below does with it.
        run.take(shared, &chunk, text, ascii, at, out);
        return;
    }
    // Anything else is traced and folded after the chunks before it.
    run.flush(shared, out);
    if shared.views.any() && update_for_views(shared, text, ascii, at, out) {
        return;
    }
    match rpc::classify(text.as_bytes()) {
        Inbound::Blank => {}
        Inbound::Notification { method, params } => {
            shared.trace_received(
                WireMeta::received(at, Kind::Notification, Some(&method), None),
                text,
                out,
            );
            if method == methods::CANCEL_REQUEST {
                cancel_incoming(shared, text, out);
            } else if method == methods::SESSION_UPDATE
                && shared.views.any()
                && !fold_into_view(shared, params.map(|p| p.get()), out)
            {
                // Folded into a view that does not forward.
            } else {
                out.push(Event::notification(
                    text,
                    ascii,
                    &method,
                    params.map(|p| p.get()),
                ));
            }
        }
        Inbound::Request { id, method, params } => {
            shared.trace_received(
                WireMeta::received(at, Kind::Request, Some(&method), Some(id.get())),
                text,
                out,
            );
            let token = shared.requests.next_token();
            let req = IncomingRequest {
                id: AgentRequestId::new(id.get()),
                method: method.as_ref().into(),
                session_id: params.and_then(|p| session_id_of(p.get())),
                received: at,
                bytes: line.len(),
                timer: None,
                full_params: None,
            };
            let caps = shared.requests.caps;
            if let Err((full, req)) = shared
                .requests
                .incoming
                .insert_within(token, req, caps.count, caps.bytes)
            {
                refuse(shared, &req, full, out);
                return;
            }
            shared.requests.taken_in();
            if builtin_route::try_serve(shared, token, method.as_ref(), params) {
                return;
            }
            if shared.views.any() {
                let params = params.map(|p| p.get());
                out.extend(
                    shared
                        .views
                        .on_agent_request(token, id.get(), &method, params),
                );
            }
            shared.arm_handler_timeout(token);
            let raw = match params.and_then(|p| {
                let cut = acp::bounded_request(id.get(), &method, p.get(), caps.handler_params)?;
                Some((p.get(), cut))
            }) {
                Some((full, cut)) => {
                    // The handler gets the params cut; the full text waits
                    // with the request for the host to ask for.
                    shared.requests.incoming.keep_params(token, full);
                    Line {
                        ascii: cut.is_ascii(),
                        text: format!(r#"{{"paramsBytes":{},"request":{cut}}}"#, full.len()),
                    }
                }
                None => line_of(text),
            };
            out.push(Event::Request { token, raw });
        }
        Inbound::Response { id, result, error } => {
            let pending = RequestId::from_wire(id.get())
                .and_then(|n| shared.requests.outgoing.take(n).map(|req| (n, req)));
            let kind = if error.is_some() {
                Kind::Error
            } else {
                Kind::Response
            };
            let mut meta = WireMeta::received(at, kind, None, Some(id.get()));
            if let Some((_, req)) = &pending {
                meta.method = Some(&req.method);
                meta.request_at = Some(req.sent);
            }
            shared.trace_received(meta, text, out);
            let Some((id, req)) = pending else {
                let given_up =
                    RequestId::from_wire(id.get()).filter(|n| shared.requests.given_up.take(*n));
                if let Some(n) = given_up {
                    // Cancelled or timed out: the spec says it is still answered.
                    tracing::debug!(pid = shared.pid(), id = %id.get(), "late answer to a request given up on");
                    if shared.views.any() {
                        // The request is over for a view too (no answer to
                        // show): a prompt turn shows as ended.
                        out.extend(shared.views.on_response(n, None));
                    }
                    return;
                }
                out.push(protocol_error(
                    shared,
                    "unknownResponse",
                    &format!("response to unknown request id {}", id.get()),
                    line,
                ));
                return;
            };
            if &*req.method == methods::SESSION_NEW {
                let answer = result.map(|r| r.get());
                shared.builtins.sessions().on_response(id, answer);
            }
            // A big result of an ACP method reaches the host cut: its JS
            // thread parses a bounded text (the full one on demand).
            let cut = result.filter(|_| error.is_none()).and_then(|r| {
                let cut = acp::bounded_result(&req.method, r.get(), shared.requests.result_budget)?;
                Some((r.get(), cut))
            });
            if &*req.method == methods::INITIALIZE {
                if let Some(Err(message)) = result.map(|r| acp::check_initialize_result(r.get())) {
                    let error = format!(
                        r#"{{"code":"{}","message":{},"method":"initialize","result":{}}}"#,
                        HostError::Protocol.as_str(),
                        json_str(&message),
                        cut.as_ref()
                            .map(|(_, cut)| cut.as_str())
                            .or(result.map(|r| r.get()))
                            .unwrap_or("null")
                    );
                    out.push(Event::Failed { id, error });
                    return;
                }
            }
            if shared.views.any() {
                let answer = result.filter(|_| error.is_none()).map(|r| r.get());
                out.extend(shared.views.on_response(id, answer));
            }
            let raw = match cut {
                Some((full, cut)) => {
                    // No `id`: what tells the host this answer is cut.
                    shared.requests.cut_results.keep(id, full.to_owned());
                    Line {
                        ascii: cut.is_ascii(),
                        text: format!(r#"{{"resultBytes":{},"result":{cut}}}"#, full.len()),
                    }
                }
                None => line_of(text),
            };
            out.push(Event::Response { id, raw });
        }
        Inbound::Invalid(invalid) => {
            shared.trace_received(WireMeta::received(at, Kind::Invalid, None, None), text, out);
            on_invalid(shared, invalid, line, out);
        }
    }
}

/// Too many agent requests wait already: answer this one with a typed
/// error at once, and tell the host (once per episode).
fn refuse(shared: &Arc<Shared>, req: &IncomingRequest, full: Full, out: &mut Vec<Event>) {
    let caps = shared.requests.caps;
    let (what, pending) = match full {
        Full::Count(n) => (format!("{n} requests"), format!(r#""pendingRequests":{n}"#)),
        Full::Bytes(b) => (
            format!("{b} bytes of requests"),
            format!(r#""pendingBytes":{b}"#),
        ),
    };
    let data = format!(
        r#"{{"reason":"tooManyPendingRequests",{pending},"maxPendingRequests":{},"maxPendingBytes":{}}}"#,
        caps.count, caps.bytes
    );
    shared.send_reply(
        req,
        acp::Reply::Error {
            code: rpc::ErrorCode::INTERNAL_ERROR,
            message: format!(
                "refused: {what} from this agent already wait for an answer; answer or cancel some first"
            ),
            data: Some(data.clone()),
        },
    );
    let (total, first_of_episode) = shared.requests.refused_one();
    if first_of_episode {
        tracing::warn!(pid = shared.pid(), method = %req.method, "agent requests refused: too many wait for an answer");
        out.push(Event::Host {
            name: "requestRefused",
            payload: format!(
                r#"{{"method":{},"refusedTotal":{total},"data":{data}}}"#,
                json_str(&req.method)
            ),
            budgeted: true,
        });
    }
}

/// A `session/update` line offered to the views, read once: its envelope
/// up to the params here, the params by the fold ([`view::update_line`]),
/// where classifying it first would have skipped over all of them. False
/// (nothing done) when the line is not of that shape or its params are
/// not an update's: the general path then reads it.
fn update_for_views(
    shared: &Shared,
    text: &str,
    ascii: bool,
    at: Instant,
    out: &mut Vec<Event>,
) -> bool {
    let Some(line) = view::update_line(text) else {
        return false;
    };
    let Some(params) = shared.views.read_params(line.params) else {
        return false;
    };
    shared.trace_received(
        WireMeta::received(at, Kind::Notification, Some(line.method), None),
        text,
        out,
    );
    let folded = shared.views.on_params(params);
    out.extend(folded.signal);
    if folded.forward {
        out.push(Event::notification(
            text,
            ascii,
            line.method,
            Some(line.params),
        ));
    }
    true
}

/// Offer a `session/update` to the views; queue their change item. True
/// when the notification is to be delivered as well.
fn fold_into_view(shared: &Shared, params: Option<&str>, out: &mut Vec<Event>) -> bool {
    let folded = shared.views.on_update(params);
    out.extend(folded.signal);
    folded.forward
}

fn on_invalid(shared: &Shared, invalid: Invalid, line: &[u8], out: &mut Vec<Event>) {
    match invalid {
        Invalid::Noise => {
            let count = shared.wire.noise_line();
            tracing::debug!(pid = shared.pid(), count, "non-JSON line on stdout ignored");
            out.push(Event::Host {
                name: "protocolNoise",
                payload: format!(r#"{{"line":{},"count":{count}}}"#, json_str(&quote(line))),
                budgeted: true,
            });
        }
        Invalid::BadJson(e) => out.push(protocol_error(shared, "badJson", &e, line)),
        Invalid::Batch => out.push(protocol_error(
            shared,
            "batch",
            "JSON-RPC batches are not part of ACP; ignored",
            line,
        )),
        Invalid::NotJsonRpc(why) => out.push(protocol_error(shared, "notJsonRpc", why, line)),
    }
}

/// The agent withdrew one of its requests: answer it `-32800` for the host
/// and tell the host to abort the handler.
fn cancel_incoming(shared: &Arc<Shared>, text: &str, out: &mut Vec<Event>) {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: &'a serde_json::value::RawValue,
    }
    #[derive(Deserialize)]
    struct Cancel<'a> {
        #[serde(borrow)]
        params: Params<'a>,
    }
    let Ok(cancel) = serde_json::from_str::<Cancel<'_>>(text) else {
        out.push(protocol_error(
            shared,
            "notJsonRpc",
            "$/cancel_request without params.requestId",
            text.as_bytes(),
        ));
        return;
    };
    if let Some((token, req)) = shared
        .requests
        .incoming
        .take_by_wire_id(cancel.params.request_id.get())
    {
        shared.send_reply(
            &req,
            acp::Reply::Error {
                code: rpc::ErrorCode::REQUEST_CANCELLED,
                message: "Request cancelled".into(),
                data: None,
            },
        );
        out.extend(shared.settled(token, "cancelled"));
    }
}

fn quote(line: &[u8]) -> String {
    let cut = line.len().min(QUOTE_BYTES);
    String::from_utf8_lossy(&line[..cut]).into_owned()
}

fn protocol_error(shared: &Shared, kind: &str, message: &str, line: &[u8]) -> Event {
    tracing::warn!(pid = shared.pid(), kind, "{message}");
    Event::Host {
        name: "protocolError",
        payload: format!(
            r#"{{"kind":{},"message":{},"line":{}}}"#,
            json_str(kind),
            json_str(message),
            json_str(&quote(line))
        ),
        budgeted: true,
    }
}
