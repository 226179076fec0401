import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';

import { SignedXml } from 'xml-crypto';

/** A signing key and its self-signed certificate, both PEM. */
export interface KeyPair {
  /** PKCS#8 private key. */
  key: string;
  /** X.509 certificate. */
  cert: string;
}

/** A fresh RSA key and self-signed certificate, made with the machine's `openssl`. */
export function selfSignedCert(commonName: string): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'taskq-saml-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The ID of the AuthnRequest carried by an HTTP-Redirect binding URL (deflated, base64). */
export function authnRequestId(redirectUrl: string): string {
  const encoded = new URL(redirectUrl).searchParams.get('SAMLRequest');
  if (encoded === null) throw new Error(`no SAMLRequest in ${redirectUrl}`);
  const xml = inflateRawSync(Buffer.from(encoded, 'base64')).toString('utf8');
  const id = /\sID="([^"]+)"/.exec(xml)?.[1];
  if (id === undefined) throw new Error(`no ID in AuthnRequest ${xml}`);
  return id;
}

/** What the test IdP asserts. */
export interface AssertionFields {
  /** The IdP's entity ID (Issuer). */
  issuer: string;
  /** The SP's entity ID (Audience). */
  audience: string;
  /** The ACS URL (Destination, Recipient). */
  acsUrl: string;
  /** The AuthnRequest answered. */
  inResponseTo: string;
  /** The NameID (an e-mail address here). */
  nameId: string;
  /** Values of the `groups` attribute. */
  groups: string[];
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/**
 * A SAML 2.0 Response whose Assertion is signed (enveloped XML signature, RSA-SHA256, exclusive
 * C14N) with `signer`, base64-encoded as the HTTP-POST binding sends it.
 */
export function signedResponse(f: AssertionFields, signer: KeyPair): string {
  const now = new Date();
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const assertionId = `_a${randomUUID()}`;
  const xml =
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomUUID()}" Version="2.0" IssueInstant="${at(0)}" Destination="${escape(f.acsUrl)}" InResponseTo="${escape(f.inResponseTo)}">` +
    `<saml:Issuer>${escape(f.issuer)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    `<saml:Assertion ID="${assertionId}" Version="2.0" IssueInstant="${at(0)}">` +
    `<saml:Issuer>${escape(f.issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${escape(f.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData InResponseTo="${escape(f.inResponseTo)}" NotOnOrAfter="${at(300_000)}" Recipient="${escape(f.acsUrl)}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${at(-60_000)}" NotOnOrAfter="${at(300_000)}"><saml:AudienceRestriction><saml:Audience>${escape(f.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${at(0)}" SessionIndex="_s${randomUUID()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement><saml:Attribute Name="groups">${f.groups.map((g) => `<saml:AttributeValue>${escape(g)}</saml:AttributeValue>`).join('')}</saml:Attribute></saml:AttributeStatement>` +
    `</saml:Assertion></samlp:Response>`;
  const sig = new SignedXml({
    privateKey: signer.key,
    publicCert: signer.cert,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: "//*[local-name(.)='Assertion']",
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
    transforms: [
      'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
      'http://www.w3.org/2001/10/xml-exc-c14n#',
    ],
  });
  sig.computeSignature(xml, {
    location: { reference: "//*[local-name(.)='Assertion']/*[local-name(.)='Issuer']", action: 'after' },
  });
  return Buffer.from(sig.getSignedXml()).toString('base64');
}
