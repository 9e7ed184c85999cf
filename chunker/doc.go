// Package chunker cuts a byte stream into fixed-size chunks and checksums each
// byte once on the way: CRC-32C per chunk (and per 2 MiB piece of a larger
// chunk), the object's CRC-32C derived from those by combining them, and MD5
// when asked.
//
// A Chunker owns no memory and does no I/O of its own beyond reading the
// reader given to Fill: its owner attaches an empty buffer (Attach), fills it
// (Write, Fill), and takes each full chunk out (Seal), deciding itself where
// buffers come from and how long to wait for one. A full chunk is sealed only
// when more data is known to follow, so at the end of the stream Finish knows
// whether the whole object fit in the first chunk (the one-shot case, which an
// uploader can send in a single request).
//
// The loop of an owner looks like this:
//
//	for len(p) > 0 {
//		if c.NeedsBuffer() || c.Full() {
//			if c.Holding() {
//				send(c.Seal())
//			}
//			c.Attach(getBuffer())
//		}
//		p = p[c.Write(p):]
//	}
//	last, oneShot := c.Finish()
//
// # Ownership
//
// A buffer given to Attach belongs to the Chunker until Seal or Finish hands
// it out in a Chunk, whose receiver then owns it, or until Abort gives it back.
// The Chunker holds at most one buffer at a time.
package chunker
