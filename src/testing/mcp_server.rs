//! A minimal MCP server over stdio, compiled, for benchmarks and editor tests: it starts in a few
//! milliseconds (so parallel start-up measures the client, not an interpreter) and its one tool,
//! `timed_echo`, answers with the microseconds it spent on the call. With `MOCK_MCP_PROMPTS=1`
//! in its environment it also offers one prompt, `greet <who>` (for slash-command completion).

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Serves stdin/stdout until stdin closes; `initialize` is answered after `start_delay`.
pub fn serve(start_delay: Duration) -> std::io::Result<()> {
    let prompts = std::env::var("MOCK_MCP_PROMPTS").is_ok_and(|v| v == "1");
    let mut capabilities = json!({"tools": {}});
    if prompts {
        capabilities["prompts"] = json!({});
    }
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let received = Instant::now();
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let answer = match message["method"].as_str() {
            Some("initialize") => {
                std::thread::sleep(start_delay);
                json!({"result": {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                                   "serverInfo": {"name": "bench", "version": "1"}}})
            }
            Some("prompts/list") if prompts => json!({"result": {"prompts": [{"name": "greet",
                "description": "Greets someone by name",
                "arguments": [{"name": "who", "description": "Whom to greet", "required": true}]}]}}),
            Some("prompts/get") if prompts => {
                let who = message["params"]["arguments"]["who"]
                    .as_str()
                    .unwrap_or("nobody");
                json!({"result": {"messages": [{"role": "user",
                    "content": {"type": "text", "text": format!("Say hello to {who}.")}}]}})
            }
            Some("tools/list") => json!({"result": {"tools": [{"name": "timed_echo",
                "description": "Answers with its own time for the call, in microseconds",
                "inputSchema": {"type": "object", "properties": {}}}]}}),
            Some("tools/call") => {
                let took = received.elapsed().as_secs_f64() * 1e6;
                json!({"result": {"content": [{"type": "text", "text": format!("{took:.1}")}]}})
            }
            Some("ping") => json!({"result": {}}),
            _ => json!({"error": {"code": -32601, "message": "method not found"}}),
        };
        let mut reply = answer;
        reply["jsonrpc"] = json!("2.0");
        reply["id"] = id;
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    Ok(())
}
