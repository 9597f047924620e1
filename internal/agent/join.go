package agent

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/structs"
)

// Joining the servers' gossip pool: server.start_join (once, at start: a
// failure stops the agent, as Nomad) and server.retry_join (in the
// background every retry_interval, retry_max times at most, 0 being no
// limit; when they run out the agent exits, as Nomad's), from the server
// block or its server_join block, and -join/-retry-join.

// joinPlan is the merged join configuration of the server block.
type joinPlan struct {
	start, retry []string
	interval     time.Duration
	max          int
}

func serverJoinPlan(s *config.ServerConfig) joinPlan {
	p := joinPlan{start: append([]string(nil), s.StartJoin...), retry: append([]string(nil), s.RetryJoin...),
		interval: s.RetryInterval, max: s.RetryMaxAttempts}
	if sj := s.ServerJoin; sj != nil {
		p.start = append(p.start, sj.StartJoin...)
		p.retry = append(p.retry, sj.RetryJoin...)
		if sj.RetryInterval > 0 && (p.interval <= 0 || p.interval == 30*time.Second) {
			p.interval = sj.RetryInterval
		}
		if sj.RetryMaxAttempts > 0 {
			p.max = sj.RetryMaxAttempts
		}
	}
	if p.interval <= 0 {
		p.interval = 30 * time.Second
	}
	return p
}

// serfServerConfig sets the gossip part of a server's configuration.
func serfServerConfig(c *config.Config, sc *server.Config) error {
	sc.SerfBindAddr = c.SerfAddr()
	sc.SerfAdvertise = c.AdvertiseSerfAddr()
	sc.RejoinAfterLeave = c.Server.RejoinAfterLeave
	sc.NonVoter = c.Server.NonVotingServer
	if ap := c.Autopilot; ap != nil {
		d := structs.DefaultAutopilotConfig()
		setBool(&d.CleanupDeadServers, ap.CleanupDeadServers)
		if ap.LastContactThreshold > 0 {
			d.LastContactThreshold = ap.LastContactThreshold
		}
		if ap.MaxTrailingLogs > 0 {
			d.MaxTrailingLogs = uint64(ap.MaxTrailingLogs)
		}
		if ap.MinQuorum > 0 {
			d.MinQuorum = uint(ap.MinQuorum)
		}
		if ap.ServerStabilizationTime > 0 {
			d.ServerStabilizationTime = ap.ServerStabilizationTime
		}
		setBool(&d.EnableRedundancyZones, ap.EnableRedundancyZones)
		setBool(&d.DisableUpgradeMigration, ap.DisableUpgradeMigration)
		setBool(&d.EnableCustomUpgrades, ap.EnableCustomUpgrades)
		sc.AutopilotConfig = d
	}
	if k := c.Server.EncryptKey; k != "" {
		key, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			return fmt.Errorf("agent: server.encrypt is not base64: %v", err)
		}
		sc.SerfEncryptKey = key
	}
	return nil
}

// startJoining joins start_join now and starts retry_join in the
// background.
func (a *Agent) startJoining() error {
	if a.server == nil {
		return nil
	}
	p := serverJoinPlan(a.config.Server)
	if len(p.start) > 0 {
		n, err := a.server.Join(p.start)
		if err != nil && n == 0 {
			return fmt.Errorf("agent: server.start_join: joining %v failed: %v", p.start, err)
		}
		a.logger.Info("joined the servers' gossip pool", "contacted", n)
	}
	if len(p.retry) > 0 {
		a.joinWG.Add(1)
		go func() {
			defer a.joinWG.Done()
			a.retryJoin(p)
		}()
	}
	return nil
}

// retryJoin tries the retry_join addresses until one answers, the attempts
// run out or the agent stops.
func (a *Agent) retryJoin(p joinPlan) {
	for attempt := 1; ; attempt++ {
		n, err := a.server.Join(p.retry)
		if n > 0 {
			a.logger.Info("retry_join: joined the servers' gossip pool", "contacted", n)
			return
		}
		if p.max > 0 && attempt >= p.max {
			a.fatalCh <- fmt.Errorf("agent: retry_join: %d attempts to join %v failed (retry_max): %v", attempt, p.retry, err)
			return
		}
		a.logger.Warn("retry_join: join failed; retrying", "addresses", p.retry, "in", p.interval, "error", err)
		select {
		case <-time.After(p.interval):
		case <-a.joinStop:
			return
		}
	}
}
