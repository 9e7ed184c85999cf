// Package telemetry is the uploader's metrics, tracing and logging:
// OpenTelemetry instruments and spans, and slog records.
//
// A client has one Telemetry; each upload reports to an Events, which its
// Writer owns. Everything is recorded once per upload, synchronously, on the
// uploading goroutine, when the upload ends; retries and resumes are logged
// and added to the span as they happen. Attribute sets (an upload's result,
// path and tenant attribute) are built once per distinct value and reused,
// so recording allocates nothing. With otel's global providers left unset,
// or the no-op ones, no instrument is created and no span is started: an
// application without OpenTelemetry pays about nothing.
package telemetry
