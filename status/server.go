package status

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

//go:embed page/index.html
var page embed.FS

// Config is what Start needs.
type Config struct {
	// Addr is host:port to listen on (gokafkad.http.listener).
	Addr string
	// Node reads the node's state; called for every poll and scrape.
	Node func() *Node
	// Counters are the node's running counts (nil: none are kept).
	Counters *Counters
	Logger   zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server is a running HTTP listener.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Start binds cfg.Addr and serves / (the page), /v1/status (its JSON) and /metrics.
func Start(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(cfg.Node, cfg.Counters, cfg.Now),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	index, err := page.ReadFile("page/index.html")
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// The page builds its DOM from the JSON with textContent only; nothing else
		// may run in it.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		w.Write(index)
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(cfg.Node())
	})
	errLog := errLogger{cfg.Logger}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: errLog, ErrorHandling: promhttp.ContinueOnError}))
	s := &Server{ln: ln, done: make(chan struct{}), srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error().Err(err).Msg("HTTP listener stopped")
		}
	}()
	return s, nil
}

// Addr is the bound address (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening and waits (up to 5 s) for requests being answered, so no
// handler reads the node while it closes; then it closes every connection.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// errLogger is promhttp's error log on zerolog.
type errLogger struct{ log zerolog.Logger }

func (l errLogger) Println(v ...any) { l.log.Warn().Msgf("metrics: %v", v) }
