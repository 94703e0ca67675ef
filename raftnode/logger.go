package raftnode

import (
	"context"
	"fmt"
	"log/slog"

	"go.etcd.io/raft/v3"
)

// raftLogger adapts slog to raft's Logger. raft's Panic and Fatal mean a
// broken invariant inside raft: both log and panic.
type raftLogger struct{ lg *slog.Logger }

var _ raft.Logger = raftLogger{}

func (l raftLogger) log(level slog.Level, msg string) {
	l.lg.Log(context.Background(), level, "raft: "+msg)
}

func (l raftLogger) Debug(v ...any) { l.log(slog.LevelDebug, fmt.Sprint(v...)) }
func (l raftLogger) Debugf(format string, v ...any) {
	l.log(slog.LevelDebug, fmt.Sprintf(format, v...))
}
func (l raftLogger) Info(v ...any)                 { l.log(slog.LevelInfo, fmt.Sprint(v...)) }
func (l raftLogger) Infof(format string, v ...any) { l.log(slog.LevelInfo, fmt.Sprintf(format, v...)) }
func (l raftLogger) Warning(v ...any)              { l.log(slog.LevelWarn, fmt.Sprint(v...)) }
func (l raftLogger) Warningf(format string, v ...any) {
	l.log(slog.LevelWarn, fmt.Sprintf(format, v...))
}
func (l raftLogger) Error(v ...any) { l.log(slog.LevelError, fmt.Sprint(v...)) }
func (l raftLogger) Errorf(format string, v ...any) {
	l.log(slog.LevelError, fmt.Sprintf(format, v...))
}
func (l raftLogger) Fatal(v ...any)                 { l.Panic(v...) }
func (l raftLogger) Fatalf(format string, v ...any) { l.Panicf(format, v...) }
func (l raftLogger) Panic(v ...any) {
	s := fmt.Sprint(v...)
	l.log(slog.LevelError, s)
	panic(s)
}
func (l raftLogger) Panicf(format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	l.log(slog.LevelError, s)
	panic(s)
}
