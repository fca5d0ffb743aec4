//! A real SMTP server on loopback that keeps what it is sent: enough of RFC 5321 for a client that speaks it
//! plainly (EHLO, MAIL, RCPT, DATA with dot-stuffing, RSET, NOOP, QUIT), so a test reads the mail a person
//! would get.

use std::sync::{Arc, Mutex};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
};

/// One mail as it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedMail {
    pub from: String,
    pub to: Vec<String>,
    /// Headers and body, as sent (dots unstuffed, CRLF line ends).
    pub data: String,
}

impl ReceivedMail {
    /// A header's value (the first of that name), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let (head, _) = self.data.split_once("\r\n\r\n")?;
        let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    /// The body as text: quoted-printable decoded when it is so encoded.
    pub fn text(&self) -> String {
        let body = self
            .data
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .unwrap_or_default();
        let encoding = self
            .header("Content-Transfer-Encoding")
            .unwrap_or_default()
            .to_ascii_lowercase();
        match encoding.as_str() {
            "quoted-printable" => decode_quoted_printable(body),
            "base64" => panic!("the test sink does not decode base64 bodies"),
            _ => body.replace("\r\n", "\n"),
        }
    }
}

fn decode_quoted_printable(body: &str) -> String {
    let joined = body.replace("=\r\n", "").replace("\r\n", "\n");
    let bytes = joined.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok());
        match (
            bytes[at],
            hex.and_then(|pair| u8::from_str_radix(pair, 16).ok()),
        ) {
            (b'=', Some(byte)) => {
                decoded.push(byte);
                at += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// The running server: where it listens and what it received.
pub struct SmtpSink {
    pub url: String,
    pub mails: Arc<Mutex<Vec<ReceivedMail>>>,
}

impl SmtpSink {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the SMTP sink");
        let url = format!("smtp://{}", listener.local_addr().expect("address"));
        let mails: Arc<Mutex<Vec<ReceivedMail>>> = Arc::default();
        let kept = mails.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    let _ = converse(stream, kept).await;
                });
            }
        });
        Self { url, mails }
    }

    /// The mails received so far.
    pub fn received(&self) -> Vec<ReceivedMail> {
        self.mails.lock().expect("lock").clone()
    }
}

async fn converse(
    stream: tokio::net::TcpStream,
    kept: Arc<Mutex<Vec<ReceivedMail>>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 sink ESMTP ready\r\n").await?;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_ascii_uppercase();
        let reply: &[u8] = if command.starts_with("EHLO") || command.starts_with("HELO") {
            b"250-sink\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
        } else if command.starts_with("MAIL FROM:") {
            from = line
                .trim_end()
                .get(10..)
                .unwrap_or_default()
                .trim()
                .to_owned();
            b"250 OK\r\n"
        } else if command.starts_with("RCPT TO:") {
            to.push(
                line.trim_end()
                    .get(8..)
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            );
            b"250 OK\r\n"
        } else if command == "DATA" {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut data = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" {
                    break;
                }
                data.push_str(line.strip_prefix('.').unwrap_or(&line));
            }
            kept.lock().expect("lock").push(ReceivedMail {
                from: std::mem::take(&mut from),
                to: std::mem::take(&mut to),
                data,
            });
            b"250 OK queued\r\n"
        } else if command == "QUIT" {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else if command == "RSET" || command == "NOOP" {
            b"250 OK\r\n"
        } else {
            b"502 not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
}
