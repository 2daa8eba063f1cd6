module sentry

go 1.26.8

require (
	github.com/seccomp/libseccomp-golang v0.11.1
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.50.0
)

require go.uber.org/multierr v1.10.0 // indirect
