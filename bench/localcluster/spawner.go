package localcluster

import (
	"errors"
	"os/exec"
	"runtime"
)

var errSpawnerClosed = errors.New("localcluster: cluster closed")

// spawner starts child processes from one goroutine locked to its OS thread.
// Linux delivers a child's Pdeathsig when the thread that forked it exits,
// not the process, so forking from arbitrary goroutines (whose threads the Go
// runtime may retire) could kill children early. The locked thread lives until
// close; its exit then also kills any child still running.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	runtime.LockOSThread()
	// Deliberately never unlocked: the thread exits with this goroutine.
	defer close(s.done)
	for r := range s.reqs {
		r.errc <- r.cmd.Start()
	}
}

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, errc: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.done:
		return errSpawnerClosed
	}
	return <-r.errc
}

// close ends the thread. Call it once, after every child has been reaped.
func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}
