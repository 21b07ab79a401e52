package controller

// Feature levels (KIP-584, KIP-778, KIP-1022), as Kafka 4.4's FeatureControlManager:
// the cluster's finalized level of each feature is a FeatureLevelRecord in the
// metadata log, in the image as MetadataImage.Features (a level of 0 removes the
// feature, as Kafka's replay does). A new cluster gets the default level of every
// feature in the entry that fixes its cluster id; a metadata log written before
// feature levels existed gets metadata.version and group.version 1 (what it already
// served) from the first active controller that sees none, and eligible leader
// replicas stay off there until an operator upgrades them, as in an upgraded Kafka.
//
// The supported ranges are what gokafkad honours, which is not always Kafka 4.4's
// (DESIGN.md, "Feature levels", gives the reason for each): metadata.version only
// 4.4-IV2 (gokafkad's metadata log is its own, so no older level can be run),
// kraft.version 0-1 (1 in a dynamic quorum, membership.go; never changed by
// UpdateFeatures), transaction.version 0-2 as
// Kafka's, a new cluster at 2 (TransactionVersion.LATEST_PRODUCTION), group.version 0-1 (KIP-848 is served; at 0 ConsumerGroupHeartbeat is
// refused as Kafka refuses it), eligible.leader.replicas.version 0-1 (elr.go),
// share.version 0 (no share groups), streams.version 0-1 as Kafka's, a new cluster at 1
// (KIP-1071 streams groups are served; at 0 StreamsGroupHeartbeat is refused).
//
// UpdateFeatures follows FeatureControlManager.updateFeatures: every update is
// checked before any is written, and the first one that fails fails the request with
// INVALID_UPDATE_VERSION and Kafka's message; an unknown upgrade type, a level below
// 0, a level outside this controller's or a registered broker's supported range
// (brokers register theirs; one that cannot run a finalized level is refused
// registration, unsupportedFinalized), or a lower level without a
// downgrade type are refused; a metadata.version downgrade is always refused (safe:
// it might delete metadata; unsafe: not supported), as Kafka 4.4. Validate-only
// checks and writes nothing. Disabling eligible.leader.replicas.version clears every
// partition's ELR and last known ELR in the same entry (Kafka's ClearElrRecord).

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature names (Kafka's Feature enum and MetadataVersion).
const (
	FeatureMetadataVersion = "metadata.version"
	FeatureKRaftVersion    = "kraft.version"
	FeatureTransaction     = "transaction.version"
	FeatureGroup           = "group.version"
	FeatureELR             = "eligible.leader.replicas.version"
	FeatureShare           = "share.version"
	FeatureStreams         = "streams.version"
)

// MetadataVersion44IV2 is metadata.version 4.4-IV2 (feature level 33), Kafka 4.4's
// latest production level and the only one gokafkad runs.
const MetadataVersion44IV2 int16 = 33

// FeatureRange is one feature this node supports: levels Min..Max, and the level a
// new cluster starts at.
type FeatureRange struct {
	Name    string `json:"name"`
	Min     int16  `json:"min"`
	Max     int16  `json:"max"`
	Default int16  `json:"-"`
}

// SupportedFeatures are the features gokafkad honours, sorted by name (see the file
// comment for each range).
var SupportedFeatures = []FeatureRange{
	{Name: FeatureELR, Min: 0, Max: 1, Default: 1},
	{Name: FeatureGroup, Min: 0, Max: 1, Default: 1},
	{Name: FeatureKRaftVersion, Min: 0, Max: 1, Default: 0},
	{Name: FeatureMetadataVersion, Min: MetadataVersion44IV2, Max: MetadataVersion44IV2, Default: MetadataVersion44IV2},
	{Name: FeatureShare, Min: 0, Max: 0, Default: 0},
	{Name: FeatureStreams, Min: 0, Max: 1, Default: 1},
	{Name: FeatureTransaction, Min: 0, Max: 2, Default: 2},
}

// supportedFeature returns name's range.
func supportedFeature(name string) (FeatureRange, bool) {
	for _, f := range SupportedFeatures {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureRange{}, false
}

// FeatureLevelRecord sets a feature's finalized level (0 removes it), as Kafka's.
type FeatureLevelRecord struct {
	Name         string `json:"name"`
	FeatureLevel int16  `json:"feature_level"`
}

// FeatureLevel returns the finalized level of feature name (0 when not finalized).
func (m *MetadataImage) FeatureLevel(name string) int16 { return m.Features[name] }

// ELREnabled reports whether eligible.leader.replicas.version is at least 1.
func (m *MetadataImage) ELREnabled() bool { return m.Features[FeatureELR] >= 1 }

// applyFeatureLevel applies r to n (a clone: Features is copied before it changes).
func applyFeatureLevel(n *MetadataImage, r *FeatureLevelRecord) {
	f := make(map[string]int16, len(n.Features)+1)
	for k, v := range n.Features {
		f[k] = v
	}
	if r.FeatureLevel <= 0 {
		delete(f, r.Name)
	} else {
		f[r.Name] = r.FeatureLevel
	}
	n.Features = f
}

// bootstrapFeatureRecords are the feature levels of a new cluster.
func bootstrapFeatureRecords() []Record {
	return defaultFeatureRecords(func(string) bool { return true })
}

// upgradedFeatureRecords are the feature levels given to a metadata log written
// before feature levels existed: metadata.version, and group.version 1 because that
// cluster already served the consumer protocol; the rest stay at 0 (as in a Kafka
// cluster upgraded from a release without them, eligible leader replicas are turned
// on by the operator: kafka-features upgrade --feature eligible.leader.replicas.version=1).
func upgradedFeatureRecords() []Record {
	return defaultFeatureRecords(func(name string) bool { return name == FeatureMetadataVersion || name == FeatureGroup })
}

// defaultFeatureRecords are the default levels of the features keep selects,
// metadata.version first.
func defaultFeatureRecords(keep func(string) bool) []Record {
	var recs []Record
	for _, f := range SupportedFeatures {
		if !keep(f.Name) {
			continue
		}
		// metadata.version first, as Kafka's bootstrap metadata.
		if f.Name == FeatureMetadataVersion {
			recs = append([]Record{{FeatureLevel: &FeatureLevelRecord{Name: f.Name, FeatureLevel: f.Default}}}, recs...)
		} else if f.Default > 0 {
			recs = append(recs, Record{FeatureLevel: &FeatureLevelRecord{Name: f.Name, FeatureLevel: f.Default}})
		}
	}
	return recs
}

// featureImageRecords are img's feature levels as records (snapshots), by name.
func featureImageRecords(img *MetadataImage) []Record {
	names := make([]string, 0, len(img.Features))
	for n := range img.Features {
		names = append(names, n)
	}
	sort.Strings(names)
	var recs []Record
	for _, n := range names {
		recs = append(recs, Record{FeatureLevel: &FeatureLevelRecord{Name: n, FeatureLevel: img.Features[n]}})
	}
	return recs
}

// Upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// UpdateFeatures carries out an UpdateFeatures request (see the file comment).
func (c *Controller) UpdateFeatures(req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.IsActive() {
		return UpdateFeaturesError(req, kerr.NotController.Code, nil)
	}
	img := c.Image()
	levels := map[string]int16{}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgradeTypeUpgrade
			if u.AllowDowngrade {
				typ = upgradeTypeSafeDowngrade
			}
		}
		cur, seen := levels[u.Feature]
		if !seen {
			cur = img.FeatureLevel(u.Feature)
		}
		if msg := c.validateFeatureUpdate(img, u.Feature, u.MaxVersionLevel, typ, cur); msg != "" {
			return UpdateFeaturesError(req, kerr.InvalidUpdateVersion.Code,
				strp("The update failed for all features since the following feature had an error: "+msg))
		}
		levels[u.Feature] = u.MaxVersionLevel
	}
	resp := kmsg.NewPtrUpdateFeaturesResponse()
	resp.SetVersion(req.Version)
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			// Kafka sends the name of Errors.NONE as the message of a feature that
			// succeeded.
			r.Feature, r.ErrorMessage = u.Feature, strp("NONE")
			resp.Results = append(resp.Results, r)
		}
	}
	if req.ValidateOnly {
		return resp
	}
	var recs []Record
	names := make([]string, 0, len(levels))
	for n := range levels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if levels[n] == img.FeatureLevel(n) {
			continue
		}
		recs = append(recs, Record{FeatureLevel: &FeatureLevelRecord{Name: n, FeatureLevel: levels[n]}})
		if n == FeatureELR && levels[n] == 0 {
			recs = append(recs, clearELRRecords(img, nil)...)
		}
	}
	var safety []Record
	if levels[FeatureELR] > 0 {
		// Ahead of the feature record, as Kafka's ConfigurationControlManager.updateFeatures.
		safety = c.elrSafetyRecords(img)
		recs = append(append([]Record(nil), safety...), recs...)
	}
	if err := c.commit(recs); err != nil {
		return UpdateFeaturesError(req, commitErrorCode(err), strp(err.Error()))
	}
	for _, r := range recs {
		if f := r.FeatureLevel; f != nil {
			c.log.Info().Str("feature", f.Name).Int16("level", f.FeatureLevel).Int16("was", img.FeatureLevel(f.Name)).Msg("feature level finalized")
		}
	}
	for _, r := range safety {
		cr := r.Config
		if cr.Value != nil {
			c.log.Info().Str("config", cr.Name).Str("value", *cr.Value).Msg("generated the cluster-level min.insync.replicas eligible leader replicas need")
		} else {
			c.log.Info().Str("config", cr.Name).Str("broker", cr.ResourceName).Msg("removed a broker-level min.insync.replicas, which eligible leader replicas do not allow")
		}
	}
	return resp
}

// validateFeatureUpdate returns why setting feature to level (from cur, with the
// upgrade type typ) is refused, in Kafka's words; "" when it may be done.
func (c *Controller) validateFeatureUpdate(img *MetadataImage, feature string, level int16, typ int8, cur int16) string {
	invalid := func(reason string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, feature, reason)
	}
	if typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if feature == FeatureKRaftVersion && level != cur {
		// kraft.version follows how the quorum was started (membership.go): a static
		// quorum cannot become dynamic in place, nor the reverse.
		return invalid("gokafkad's kraft.version is 1 for a quorum started from controller.quorum.bootstrap.servers and 0 for one started from controller.quorum.voters; it cannot be changed.")
	}
	f, ok := supportedFeature(feature)
	if !ok {
		return invalid(fmt.Sprintf("Local controller %d does not support this feature.", c.cfg.NodeID))
	}
	if level < f.Min || level > f.Max {
		return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", c.cfg.NodeID, f.Min, f.Max))
	}
	// Every registered broker must support it (ClusterFeatureSupportDescriber); one
	// that registered without features (before feature levels) is not asked.
	for _, b := range img.SortedBrokers() {
		if b.Features == nil {
			continue
		}
		bf, ok := brokerFeature(b.Features, feature)
		switch {
		case !ok && level > 0:
			return invalid(fmt.Sprintf("Broker %d does not support this feature.", b.ID))
		case ok && (level < bf.Min || level > bf.Max):
			return invalid(fmt.Sprintf("Broker %d only supports versions %d-%d", b.ID, bf.Min, bf.Max))
		}
	}
	if level > cur && typ != upgradeTypeUpgrade {
		return invalid("Can't downgrade to a newer version.")
	}
	if level < cur {
		if typ == upgradeTypeUpgrade {
			return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		}
		if feature == FeatureMetadataVersion {
			why := "Refusing to perform the requested downgrade because it might delete metadata information."
			if typ == upgradeTypeUnsafeDowngrade {
				why = "Unsafe metadata downgrade is not supported in this version."
			}
			return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", cur, level, why)
		}
	}
	return ""
}

// UpdateFeaturesError answers req with code (and msg) at the top level and, before v2,
// on every feature, as Kafka's UpdateFeaturesRequest.getErrorResponse.
func UpdateFeaturesError(req *kmsg.UpdateFeaturesRequest, code int16, msg *string) *kmsg.UpdateFeaturesResponse {
	resp := kmsg.NewPtrUpdateFeaturesResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode, resp.ErrorMessage = code, msg
	if code == kerr.InvalidUpdateVersion.Code {
		return resp // a validation failure: Kafka lists no results
	}
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature, r.ErrorCode, r.ErrorMessage = u.Feature, code, msg
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// maybeBootstrapFeatures gives a metadata log written before feature levels existed
// (no metadata.version) upgradedFeatureRecords, once, from the active controller.
// Ready loop only.
func (c *Controller) maybeBootstrapFeatures(img *MetadataImage) {
	if _, ok := img.Features[FeatureMetadataVersion]; ok || c.featuresProposed.Swap(true) {
		return
	}
	go func() {
		if err := c.Commit(upgradedFeatureRecords()); err != nil {
			c.featuresProposed.Store(false)
			return
		}
		c.log.Info().Msg("finalized metadata.version 4.4-IV2 and group.version 1 in a metadata log written before feature levels; eligible.leader.replicas.version stays 0 until upgraded with kafka-features")
	}()
}

// brokerFeature returns name's range among a broker's features.
func brokerFeature(fs []FeatureRange, name string) (FeatureRange, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureRange{}, false
}

// unsupportedFinalized returns why a broker supporting features may not register
// while img's levels are finalized (Kafka's ClusterControlManager: UNSUPPORTED_VERSION
// with this message), "" when it may. A broker that sends no features (from before
// feature levels) is let in.
func unsupportedFinalized(img *MetadataImage, features []FeatureRange) string {
	if len(features) == 0 {
		return ""
	}
	names := make([]string, 0, len(img.Features))
	for n := range img.Features {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		level := img.Features[n]
		f, ok := brokerFeature(features, n)
		if !ok {
			f = FeatureRange{Name: n}
		}
		if level < f.Min || level > f.Max {
			return fmt.Sprintf("Unable to register because the broker does not support finalized version %d of %s. The broker wants a version between %d and %d, inclusive.", level, n, f.Min, f.Max)
		}
	}
	return ""
}
