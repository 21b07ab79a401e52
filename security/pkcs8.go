package security

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 private keys (RFC 5958 EncryptedPrivateKeyInfo), as Kafka's PEM
// keystores take them with ssl.key.password: PBES2 (RFC 8018) with PBKDF2 and AES-CBC
// or DES-EDE3-CBC, which is what `openssl pkcs8 -topk8` and Java's keytool write.
// The older PBES1 schemes are refused with their OID named.

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}

	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}

	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

// ErrBadKeyPassword is returned when an encrypted key does not decrypt with the
// password given (or the encrypted data is corrupt).
var ErrBadKeyPassword = errors.New("security: the private key does not decrypt with ssl.key.password")

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// DecryptPKCS8 decrypts the DER of an EncryptedPrivateKeyInfo with password and
// parses the private key inside.
func DecryptPKCS8(der []byte, password []byte) (any, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("security: not an encrypted PKCS#8 private key")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("security: encrypted private key uses scheme %v; only PBES2 (openssl pkcs8 -v2, keytool) is supported", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("security: bad PBES2 parameters")
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("security: PBES2 key derivation %v is not supported (PBKDF2 is)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("security: bad PBKDF2 parameters")
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("security: PBKDF2 iteration count %d out of range", kdf.IterationCount)
	}
	var prf func() hash.Hash
	switch p := kdf.PRF.Algorithm; {
	case len(p) == 0 || p.Equal(oidHMACSHA1):
		prf = sha1.New
	case p.Equal(oidHMACSHA224):
		prf = sha256.New224
	case p.Equal(oidHMACSHA256):
		prf = sha256.New
	case p.Equal(oidHMACSHA384):
		prf = sha512.New384
	case p.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("security: PBKDF2 pseudo-random function %v is not supported", p)
	}
	var keyLen int
	var newBlock func([]byte) (cipher.Block, error)
	switch e := params.EncryptionScheme.Algorithm; {
	case e.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case e.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case e.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case e.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("security: PBES2 cipher %v is not supported (AES-CBC and DES-EDE3-CBC are)", e)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, errors.New("security: PBKDF2 key length does not fit the cipher")
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("security: bad PBES2 cipher parameters")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("security: PBKDF2: %w", err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, ErrBadKeyPassword
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding; a wrong password almost always breaks it.
	n := int(plain[len(plain)-1])
	if n == 0 || n > block.BlockSize() {
		return nil, ErrBadKeyPassword
	}
	for _, b := range plain[len(plain)-n:] {
		if int(b) != n {
			return nil, ErrBadKeyPassword
		}
	}
	k, err := x509.ParsePKCS8PrivateKey(plain[:len(plain)-n])
	if err != nil {
		return nil, ErrBadKeyPassword
	}
	return k, nil
}
