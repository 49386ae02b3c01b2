//! MCP over stdio: newline-delimited JSON-RPC, with rmcp behind a front that reads the
//! lines itself. rmcp's own reader answered nothing to a line that is not JSON (JSON-RPC
//! wants `-32700 Parse error` with a null id) and dropped a request line over its 16 MiB
//! limit in silence, so an agent waited for its own timeout. Here every line gets an answer:
//! a request rmcp's, anything else an error that says why (and a line on stderr).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::storage::{Line, next_line};

/// The longest request line read (a tool call's arguments are a few hundred bytes).
pub(crate) const MAX_LINE: usize = 16 << 20;

/// A line from stdin, as the reader thread saw it.
enum Input {
    Line(Vec<u8>),
    TooLong(u64),
}

/// JSON-RPC's answer to what is not a request: `code` and why, with the request's id when
/// it has one (`null` otherwise).
fn error_answer(id: Value, code: i64, why: &str) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": why},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// What is answered at once instead of handing `line` to rmcp (`None`: a request or a
/// notification it reads).
fn refusal(line: &[u8]) -> Option<Vec<u8>> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_answer(
                Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            ));
        }
    };
    if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value.clone()) {
        let id = match &value["id"] {
            v @ (Value::String(_) | Value::Number(_)) => v.clone(),
            _ => Value::Null,
        };
        return Some(error_answer(id, -32600, &format!("Invalid Request: {e}")));
    }
    None
}

/// rmcp's two ends (what it reads, what it writes) on this process's stdin and stdout, and
/// the task that writes stdout: awaited after rmcp ends, so that every answer is out.
pub(crate) fn front() -> (
    (
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ),
    tokio::task::JoinHandle<()>,
) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let (out_tx, mut out_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    let (in_tx, mut in_rx) = tokio::sync::mpsc::channel::<Input>(16);
    // stdin is read by a thread of its own, with the one bounded line reader.
    let _ = std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = Vec::new();
            loop {
                let input = match next_line(&mut stdin, MAX_LINE, false, &mut buf) {
                    Ok(Some(Line::Text)) => Input::Line(std::mem::take(&mut buf)),
                    Ok(Some(Line::TooLong(n))) => Input::TooLong(n),
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!("mcp: stdin: {e}");
                        return;
                    }
                };
                if in_tx.blocking_send(input).is_err() {
                    return;
                }
            }
        });
    let refusals = out_tx.clone();
    tokio::spawn(async move {
        while let Some(input) = in_rx.recv().await {
            let answer = match input {
                Input::Line(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Input::Line(mut line) => match refusal(&line) {
                    None => {
                        line.push(b'\n');
                        if to_rmcp.write_all(&line).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Some(answer) => answer,
                },
                Input::TooLong(n) => error_answer(
                    Value::Null,
                    -32700,
                    &format!(
                        "Parse error: a request line of {n} bytes, over the {} MiB limit; not read",
                        MAX_LINE >> 20
                    ),
                ),
            };
            eprintln!(
                "spark-triage mcp: {}",
                String::from_utf8_lossy(&answer).trim_end()
            );
            if refusals.send(answer).await.is_err() {
                return;
            }
        }
        // stdin ended: rmcp reads its end and stops.
        let _ = to_rmcp.shutdown().await;
    });
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(from_rmcp).lines();
        while let Ok(Some(mut line)) = lines.next_line().await {
            line.push('\n');
            if out_tx.send(line.into_bytes()).await.is_err() {
                return;
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    (tokio::io::split(theirs), writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_request_is_answered_with_json_rpcs_error() {
        let answer = |l: &str| {
            refusal(l.as_bytes())
                .map(|a| serde_json::from_slice::<Value>(&a).expect("an answer is JSON"))
        };
        let parse = answer("{not json").expect("answered");
        assert_eq!(parse["error"]["code"], -32700);
        assert_eq!(parse["id"], Value::Null);
        let invalid = answer(r#"{"jsonrpc":"2.0","id":7,"methodd":"x"}"#).expect("answered");
        assert_eq!(invalid["error"]["code"], -32600);
        assert_eq!(invalid["id"], 7);
        assert!(
            answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none(),
            "a request goes to rmcp"
        );
        assert!(
            answer(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none(),
            "a notification too"
        );
    }
}
