// Package knob holds the settings of the uploader's machinery (windows,
// keepalive, admission, checksum passes) that package experimental sets,
// and the hooks through which it reaches package uploader without
// widening uploader's API. Its one job is to carry those settings.
package knob
