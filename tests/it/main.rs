mod compact;
mod support;
