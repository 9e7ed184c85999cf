// Package tenant shares a client's chunk buffers among its tenants: a
// table of shares (a turn at the pool's waiting line, and the bounds of
// TenantLimits), and an allocator that counts a Writer's buffers and
// upload against its tenant's share.
package tenant
