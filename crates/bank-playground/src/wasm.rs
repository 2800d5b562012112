//! The C functions the page calls. A question goes in as UTF-8 JSON written into memory from
//! [`playground_alloc`]; [`playground_reply`] answers it and returns the reply's length in bytes,
//! which the page reads from [`playground_reply_ptr`] before asking again.

use std::cell::RefCell;

thread_local! {
    /// The last reply, kept until the next question (the page is single-threaded).
    static LAST_REPLY: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `len` bytes the page may write a question into; give them back with [`playground_free`].
#[unsafe(no_mangle)]
pub extern "C" fn playground_alloc(len: usize) -> *mut u8 {
    let mut buffer = Vec::<u8>::with_capacity(len);
    let ptr = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    ptr
}

/// Frees what [`playground_alloc`] gave for `len` bytes.
///
/// # Safety
/// `ptr` must come from `playground_alloc(len)` and not have been freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn playground_free(ptr: *mut u8, len: usize) {
    // SAFETY: the caller passes back a buffer of capacity `len` from `playground_alloc`.
    drop(unsafe { Vec::from_raw_parts(ptr, 0, len) });
}

/// Answers the question in `len` bytes at `ptr`; returns the reply's length.
///
/// # Safety
/// `ptr` must point to `len` initialized bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn playground_reply(ptr: *const u8, len: usize) -> usize {
    // SAFETY: the caller wrote `len` bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let reply = match std::str::from_utf8(bytes) {
        Ok(question) => crate::reply(question),
        Err(_) => crate::Reply::Error("the question is not UTF-8".to_owned()),
    };
    let reply = serde_json::to_string(&reply).expect("replies are plain data");
    LAST_REPLY.with(|last| {
        *last.borrow_mut() = reply;
        last.borrow().len()
    })
}

/// Where the last reply's bytes start; valid until the next [`playground_reply`].
#[unsafe(no_mangle)]
pub extern "C" fn playground_reply_ptr() -> *const u8 {
    LAST_REPLY.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_through_memory_comes_back_answered() {
        let question = br#"{"op":"ld","width":4,"mode":"index","index":"lane * 32"}"#;
        let ptr = playground_alloc(question.len());
        // SAFETY: the buffer holds `question.len()` bytes, written before they are read.
        let reply = unsafe {
            std::ptr::copy_nonoverlapping(question.as_ptr(), ptr, question.len());
            let len = playground_reply(ptr, question.len());
            playground_free(ptr, question.len());
            String::from_utf8(std::slice::from_raw_parts(playground_reply_ptr(), len).to_vec()).unwrap()
        };
        let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["answer"]["wavefronts"], 32);
    }
}
