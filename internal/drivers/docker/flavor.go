package docker

// Flavor is the engine a Driver drives through the Docker Engine API:
// Docker itself (the zero value), or podman through its Docker-compatible
// API (the podman driver, internal/drivers/podman, is this driver with
// podman's flavor: its own name, task config keys and engine quirks).
type Flavor struct {
	// Name is the driver's name in jobspecs, node attributes and messages.
	Name string
	// ParseTask reads a task's `config {}` block (ParseTaskConfig if nil).
	ParseTask func(map[string]any) (*TaskConfig, error)
	// Podman selects podman's behaviour where its compatible API differs
	// from Docker's: no DOCKER_HOST, fingerprint attributes, stats sampling.
	Podman bool
}

func (f Flavor) name() string {
	if f.Name == "" {
		return Name
	}
	return f.Name
}

func (f Flavor) parseTask(m map[string]any) (*TaskConfig, error) {
	if f.ParseTask != nil {
		return f.ParseTask(m)
	}
	return ParseTaskConfig(m)
}
